/**
 * `catalogues add|list|set|remove`: catalogues, from the command line, while the service runs too
 * (admin/admin-channel.ts). Each catalogue's products are at /catalogues/{name}/products….
 */
import { runAdminOperation } from "../admin/admin-channel.ts";
import { EXIT, type RegisterCommand } from "./command.ts";

export const registerCatalogues: RegisterCommand = (program, run, output) => {
  const catalogues = program.command("catalogues").description("manage catalogues (each shop's products apart)");
  catalogues
    .command("add")
    .argument("<name>", "lower-case letters, digits, '_' and '-', 1 to 63, not starting with '_' or '-'")
    .description("create an empty catalogue and print it as one JSON object")
    .action((name: string) =>
      run(async (config) => {
        output.out(`${JSON.stringify(await runAdminOperation(config, "catalogues.add", { name }))}\n`);
        return EXIT.ok;
      }),
    );
  catalogues
    .command("list")
    .description("list the catalogues with their product counts and settings (one JSON object a line)")
    .action(() =>
      run(async (config) => {
        for (const catalogue of (await runAdminOperation(config, "catalogues.list", {})) as unknown[]) {
          output.out(`${JSON.stringify(catalogue)}\n`);
        }
        return EXIT.ok;
      }),
    );
  catalogues
    .command("set")
    .argument("<name>")
    .requiredOption(
      "--embedded-attributes <names>",
      "the attributes embedded with each product's text, separated by commas ('' for none): at most 8",
    )
    .description(
      "change a catalogue's settings and print it as one JSON object, with how many products are now stale " +
        "(`reembed --catalogue <name>` embeds them again)",
    )
    .action((name: string, options: { embeddedAttributes: string }) =>
      run(async (config) => {
        const embedded = options.embeddedAttributes
          .split(",")
          .map((key) => key.trim())
          .filter((key) => key !== "");
        const configured = await runAdminOperation(config, "catalogues.set", { name, embedded_attributes: embedded });
        output.out(`${JSON.stringify(configured)}\n`);
        return EXIT.ok;
      }),
    );
  catalogues
    .command("remove")
    .argument("<name>")
    .description("remove a catalogue and every product in it (not default)")
    .action((name: string) =>
      run(async (config) => {
        await runAdminOperation(config, "catalogues.remove", { name });
        output.out(`catalogue '${name}' removed\n`);
        return EXIT.ok;
      }),
    );
};
