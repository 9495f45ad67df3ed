/** What a test may send: `json` and `form` set the body and its Content-Type. */
export interface CallOptions {
  json?: unknown;
  form?: Record<string, string>;
  body?: RequestInit["body"];
  token?: string;
  headers?: Record<string, string>;
}

export interface CallResult {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever shape each endpoint answers with.
  json: any;
}

/** Sends one request through an app in process (Elysia's `handle`); `json` is undefined when the body is not JSON. */
export async function callApp(
  app: { handle(request: Request): Promise<Response> },
  method: string,
  path: string,
  init: CallOptions = {},
): Promise<CallResult> {
  const headers = new Headers(init.headers);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set("content-type", "application/json");
    body = JSON.stringify(init.json);
  }
  if (init.form !== undefined) {
    headers.set("content-type", "application/x-www-form-urlencoded");
    body = new URLSearchParams(init.form).toString();
  }
  if (init.token !== undefined) headers.set("authorization", `Bearer ${init.token}`);
  const response = await app.handle(new Request(`http://localhost${path}`, { method, headers, body }));
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}
