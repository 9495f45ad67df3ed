/**
 * `synonyms get|set`: a catalogue's synonyms from the command line, while the service runs too
 * (admin/admin-channel.ts), as GET and PUT /products/synonyms do them.
 */
import { readFileSync } from "node:fs";
import { Option } from "commander";
import { DEFAULT_CATALOGUE } from "../../domain/caller.ts";
import { runAdminOperation } from "../admin/admin-channel.ts";
import { EXIT, type RegisterCommand, readStandardInput, UsageError } from "./command.ts";

const catalogueOption = () =>
  new Option("--catalogue <name>", "the catalogue whose synonyms these are").default(DEFAULT_CATALOGUE);

export const registerSynonyms: RegisterCommand = (program, run, output) => {
  const synonyms = program
    .command("synonyms")
    .description("the words or phrases a catalogue's searches take as the same (hybrid and lexical searches)");
  synonyms
    .command("get")
    .addOption(catalogueOption())
    .description('print the catalogue\'s synonyms as JSON, {"synonyms": [["móvil", "celular"], ...]}')
    .action((options: { catalogue: string }) =>
      run(async (config) => {
        const answer = await runAdminOperation(config, "synonyms.get", { catalogue: options.catalogue });
        output.out(`${JSON.stringify(answer)}\n`);
        return EXIT.ok;
      }),
    );
  synonyms
    .command("set")
    .argument(
      "<file>",
      'the synonyms, "-" for stdin: the JSON `get` prints, or one set a line, its terms separated by commas',
    )
    .addOption(catalogueOption())
    .description("replace every synonym of the catalogue with those of the file (an empty file removes them all)")
    .action((file: string, options: { catalogue: string }) =>
      run(async (config) => {
        const text = file === "-" ? await readStandardInput(output) : readText(file);
        const answer = (await runAdminOperation(config, "synonyms.set", {
          catalogue: options.catalogue,
          synonyms: parseSynonyms(text),
        })) as { synonyms: unknown[] };
        output.out(`${answer.synonyms.length} synonym sets stored for catalogue '${options.catalogue}'\n`);
        return EXIT.ok;
      }),
    );
};

function readText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
}

/**
 * The sets a file holds: JSON (`{"synonyms": [[...], ...]}`, as `get` prints, or the bare list), or
 * else one set a line, terms separated by commas (blank lines and lines starting with # skipped).
 */
export function parseSynonyms(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch (error) {
      throw new UsageError(`the file is not valid JSON: ${(error as Error).message}`);
    }
    return Array.isArray(parsed) ? parsed : (parsed as { synonyms?: unknown }).synonyms;
  }
  return trimmed
    .split(/\r?\n/u)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => line.split(",").map((term) => term.trim()));
}
