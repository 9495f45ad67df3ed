/** A catalogue's synonyms as admin operations (admin-channel.ts): `synonyms get|set`. */
import { CatalogueNotFound, InvalidInput } from "../../domain/errors.ts";
import type { CompositionRoot } from "../composition-root.ts";
import { type AdminOperation, textArg } from "./operation.ts";

/** The catalogue the arguments name; CatalogueNotFound when there is none of that name (as the HTTP routes answer 404). */
async function existingCatalogue(root: CompositionRoot, args: Parameters<AdminOperation>[1]): Promise<string> {
  const catalogue = textArg(args, "catalogue");
  if (!(await (await root.manageCatalogues()).exists(catalogue))) throw new CatalogueNotFound(catalogue);
  return catalogue;
}

export const SYNONYM_OPERATIONS: Record<string, AdminOperation> = {
  "synonyms.get": async (root: CompositionRoot, args) => ({
    synonyms: await (await root.manageSynonyms()).get(await existingCatalogue(root, args)),
  }),
  "synonyms.set": async (root, args) => {
    const catalogue = await existingCatalogue(root, args);
    const sets = args.synonyms;
    if (
      !Array.isArray(sets) ||
      !sets.every((set) => Array.isArray(set) && set.every((term) => typeof term === "string"))
    ) {
      throw new InvalidInput("Los sinónimos deben ser una lista de grupos, cada uno una lista de textos");
    }
    return { synonyms: await (await root.manageSynonyms()).replace(catalogue, sets as string[][]) };
  },
};
