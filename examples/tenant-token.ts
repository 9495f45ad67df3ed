// A tenant token for one shopper, made by the shop's backend without calling sku-search:
// bun examples/tenant-token.ts "$KEY" '{"category": ["Cocina"]}' 3600
import { createHmac } from "node:crypto";

export function tenantToken(apiKey: string, filter: object, expiresInSeconds = 3600): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const keyId = apiKey.split("_")[1]; // sks_<key id>_<secret>
  const header = part({ alg: "HS256", typ: "JWT" });
  const payload = part({ key_id: keyId, exp: Math.floor(Date.now() / 1000) + expiresInSeconds, filter });
  const signature = createHmac("sha256", apiKey).update(`${header}.${payload}`).digest("base64url");
  return `${header}.${payload}.${signature}`;
}

if (import.meta.main) {
  const [apiKey = "", filter = "{}", seconds = "3600"] = process.argv.slice(2);
  console.log(tenantToken(apiKey, JSON.parse(filter), Number(seconds)));
}
