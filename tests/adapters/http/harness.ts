import { createHttpApp, type HttpSettings, type LogEvent } from "../../../src/adapters/http/app.ts";
import { type JwtAlgorithm, JwtTokenService } from "../../../src/adapters/http/jwt-token-service.ts";
import { MemoryDatabaseHealth } from "../../../src/adapters/memory/database-health.ts";
import { MemoryProductRepository } from "../../../src/adapters/memory/product-repository.ts";
import { MemoryUserRepository } from "../../../src/adapters/memory/user-repository.ts";
import { BunPasswordHasher } from "../../../src/adapters/security/bun-password-hasher.ts";
import { Authenticate } from "../../../src/domain/authenticate.ts";
import { CreateProduct } from "../../../src/domain/create-product.ts";
import { ImportProducts } from "../../../src/domain/import-products.ts";
import { LoginThrottle } from "../../../src/domain/login-throttle.ts";
import { ManageProducts } from "../../../src/domain/manage-products.ts";
import { ManageUsers } from "../../../src/domain/manage-users.ts";
import { SearchAndRecommend } from "../../../src/domain/search-and-recommend.ts";
import { FakeClock } from "../../fakes/fake-clock.ts";
import { FakeEmbedder } from "../../fakes/fake-embedder.ts";
import { FakeGenerator } from "../../fakes/fake-generator.ts";
import { type CallOptions, callApp } from "../../support/app-client.ts";

export const SECRET = "secreto-de-pruebas-que-nunca-debe-salir-en-una-respuesta";
export const USERNAME = "ana";
export const PASSWORD = "contraseña-de-ana";
export const USERNAME_POLICY = { maxFailures: 5, windowMs: 15 * 60_000, lockoutMs: 15 * 60_000 };
export const ADDRESS_POLICY = { maxFailures: 50, windowMs: 15 * 60_000, lockoutMs: 15 * 60_000 };

export interface HarnessOptions {
  settings?: Partial<HttpSettings>;
  algorithm?: JwtAlgorithm;
  addressPolicy?: typeof ADDRESS_POLICY;
}

/** The real app and use cases over in-memory repositories, a fake embedder, generator and clock. */
export async function createHarness(options: HarnessOptions = {}) {
  const users = new MemoryUserRepository();
  const products = new MemoryProductRepository();
  const health = new MemoryDatabaseHealth();
  const embedder = new FakeEmbedder();
  const generator = new FakeGenerator();
  const clock = new FakeClock();
  const hasher = new BunPasswordHasher();
  const tokens = new JwtTokenService({ secret: SECRET, algorithm: options.algorithm ?? "HS256", expireMinutes: 30 });
  const authenticate = new Authenticate({
    users,
    hasher,
    tokens,
    usernameThrottle: new LoginThrottle(USERNAME_POLICY, clock),
    addressThrottle: new LoginThrottle(options.addressPolicy ?? ADDRESS_POLICY, clock),
  });
  const user = await new ManageUsers({ users, hasher }).add(USERNAME, PASSWORD);
  const logs: LogEvent[] = [];
  const app = createHttpApp({
    authenticate,
    createProduct: new CreateProduct({ products, embedder }),
    manageProducts: new ManageProducts({ products, embedder }),
    importProducts: new ImportProducts({ products, embedder }),
    search: new SearchAndRecommend({ products, embedder, generator }),
    health,
    settings: {
      projectName: "sku-search",
      version: "1.0.0",
      searchRequiresAuth: true,
      maxBodyBytes: 64 * 1024,
      trustProxy: false,
      requestTimeoutMs: 30_000,
      bulk: { maxBytes: 1024 * 1024, maxItems: 1000 },
      ...options.settings,
    },
    log: (event) => logs.push(event),
  });
  const token = await tokens.issue({ userId: user.id, username: user.username, tokenVersion: user.tokenVersion });

  /** Sends one request through the app in process; the request log line is written just after the response. */
  async function call(method: string, path: string, init: CallOptions = {}) {
    const result = await callApp(app, method, path, init);
    await Bun.sleep(0);
    return result;
  }

  return { app, users, products, health, embedder, generator, clock, tokens, user, token, logs, call };
}

export type Harness = Awaited<ReturnType<typeof createHarness>>;
