/** API keys' administration as admin operations (admin-channel.ts): `keys add|list|revoke`. */
import { keyView, listedKeyView } from "../../adapters/http/keys/key-view.ts";
import { InvalidInput } from "../../domain/errors.ts";
import { type AdminOperation, textArg, textListArg } from "./operation.ts";

export const KEY_OPERATIONS: Record<string, AdminOperation> = {
  /** The key is in the answer, once (the service keeps no copy of it). */
  "keys.add": async (root, args) => {
    const expires = args.expires_at;
    if (expires !== null && expires !== undefined && typeof expires !== "string") {
      throw new InvalidInput("El argumento 'expires_at' debe ser una fecha ISO 8601");
    }
    const expiresAt = typeof expires === "string" ? new Date(expires) : null;
    if (expiresAt !== null && Number.isNaN(expiresAt.getTime())) {
      throw new InvalidInput("La fecha de caducidad debe ser ISO 8601, p. ej. 2027-01-31T00:00:00Z");
    }
    const created = await (await root.manageApiKeys()).create({
      name: textArg(args, "name"),
      actions: textListArg(args, "actions"),
      catalogues: textListArg(args, "catalogues"),
      expiresAt,
    });
    return { ...keyView(created.apiKey, created.prefix), key: created.key };
  },
  "keys.list": async (root) => {
    const manage = await root.manageApiKeys();
    return (await manage.list()).map((apiKey) => listedKeyView(apiKey, manage.prefixOf(apiKey.id)));
  },
  "keys.revoke": async (root, args) => {
    await (await root.manageApiKeys()).revoke(textArg(args, "id"));
    return {};
  },
};
