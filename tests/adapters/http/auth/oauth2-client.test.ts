import { afterEach, describe, expect, test } from "bun:test";
import { ResourceOwnerPassword } from "simple-oauth2";
import { createHarness, type Harness, PASSWORD, USERNAME } from "../harness.ts";

/** The harness's tokens last 30 minutes (ACCESS_TOKEN_EXPIRE_MINUTES=30). */
const LIFETIME_SECONDS = 30 * 60;

let listening: Harness["app"] | undefined;
afterEach(async () => {
  await listening?.stop(true);
  listening = undefined;
});

async function serve() {
  const h = await createHarness();
  listening = h.app.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listening.server?.port;
  if (!port) throw new Error("the app is not listening");
  return { h, base: `http://127.0.0.1:${port}` };
}

describe("POST /auth/login as an OAuth2 token endpoint (password grant, RFC 6749 4.3)", () => {
  test("simple-oauth2 logs in, gets a bearer token that opens the API, and knows when it expires", async () => {
    const { base } = await serve();
    // Our login needs no client credentials: the client's id and secret are empty, as in Swagger UI.
    const client = new ResourceOwnerPassword({
      client: { id: "", secret: "" },
      auth: { tokenHost: base, tokenPath: "/auth/login" },
    });
    const before = Date.now();
    const accessToken = await client.getToken({ username: USERNAME, password: PASSWORD });

    expect(accessToken.token.token_type).toBe("bearer");
    expect(accessToken.token.expires_in).toBe(LIFETIME_SECONDS);
    const expiresAt = (accessToken.token.expires_at as Date).getTime();
    expect(expiresAt).toBeGreaterThanOrEqual(before + LIFETIME_SECONDS * 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + LIFETIME_SECONDS * 1000);
    expect(accessToken.expired()).toBe(false);
    expect(accessToken.expired(LIFETIME_SECONDS + 60)).toBe(true);

    const products = await fetch(`${base}/products/`, {
      headers: { authorization: `Bearer ${accessToken.token.access_token}` },
    });
    expect(products.status).toBe(200);
  });

  test("wrong credentials make the client fail with the 401", async () => {
    const { base } = await serve();
    const client = new ResourceOwnerPassword({
      client: { id: "", secret: "" },
      auth: { tokenHost: base, tokenPath: "/auth/login" },
    });
    const failure = await client.getToken({ username: USERNAME, password: "otra" }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as { output?: { statusCode?: number } }).output?.statusCode).toBe(401);
  });

  test("the request Swagger UI's Authorize button sends (form, Basic header of empty client credentials) logs in", async () => {
    const { base } = await serve();
    // swagger-ui 5 authorizePassword: grant_type, username and password as a form (an empty scope
    // is left out); with the default "Authorization header" client location, `Basic btoa(":")`.
    const response = await fetch(`${base}/auth/login`, {
      method: "POST",
      headers: {
        Accept: "application/json, text/plain, */*",
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Requested-With": "XMLHttpRequest",
        Authorization: `Basic ${btoa(":")}`,
      },
      body: new URLSearchParams({ grant_type: "password", username: USERNAME, password: PASSWORD }),
    });
    expect(response.status).toBe(200);
    const token = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(token).sort()).toEqual(["access_token", "expires_in", "token_type"]);
    expect(token).toMatchObject({ token_type: "bearer", expires_in: LIFETIME_SECONDS });
  });
});
