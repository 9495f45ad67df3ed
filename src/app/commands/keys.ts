/**
 * `keys add|list|revoke`: API keys, from the command line, while the service runs too
 * (admin/admin-channel.ts). `keys add` prints the key once: the service keeps no copy of it.
 */
import { Option } from "commander";
import { KEY_ACTIONS } from "../../domain/api-keys.ts";
import { runAdminOperation } from "../admin/admin-channel.ts";
import { EXIT, type RegisterCommand } from "./command.ts";

/** "a,b , c" → ["a", "b", "c"]. */
const list = (value: string) =>
  value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");

export const registerKeys: RegisterCommand = (program, run, output) => {
  const keys = program.command("keys").description("manage API keys (for shops, scripts and storefronts)");
  keys
    .command("add")
    .argument("<name>", "what the key is for")
    .requiredOption("--actions <list>", `comma-separated: ${KEY_ACTIONS.join(", ")}`, list)
    .addOption(
      new Option("--catalogues <list>", 'comma-separated catalogue names, or "*" for all')
        .argParser(list)
        .default(["default"]),
    )
    .option("--expires-at <date>", "when it stops working (ISO 8601); default: never")
    .description("create an API key and print it (once) with its id, as one JSON object")
    .action((name: string, options: { actions: string[]; catalogues: string[]; expiresAt?: string }) =>
      run(async (config) => {
        const created = await runAdminOperation(config, "keys.add", {
          name,
          actions: options.actions,
          catalogues: options.catalogues,
          expires_at: options.expiresAt ?? null,
        });
        output.out(`${JSON.stringify(created)}\n`);
        return EXIT.ok;
      }),
    );
  keys
    .command("list")
    .description("list the API keys, without their secrets (one JSON object a line)")
    .action(() =>
      run(async (config) => {
        for (const key of (await runAdminOperation(config, "keys.list", {})) as unknown[]) {
          output.out(`${JSON.stringify(key)}\n`);
        }
        return EXIT.ok;
      }),
    );
  keys
    .command("revoke")
    .argument("<id>")
    .description("revoke an API key: it and its tenant tokens stop working at once")
    .action((id: string) =>
      run(async (config) => {
        await runAdminOperation(config, "keys.revoke", { id });
        output.out(`key '${id}' revoked\n`);
        return EXIT.ok;
      }),
    );
};
