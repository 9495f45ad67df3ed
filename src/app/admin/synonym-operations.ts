/** A catalogue's synonyms as admin operations (admin-channel.ts): `synonyms get|set`. */
import { InvalidInput } from "../../domain/errors.ts";
import type { CompositionRoot } from "../composition-root.ts";
import { type AdminOperation, textArg } from "./operation.ts";

export const SYNONYM_OPERATIONS: Record<string, AdminOperation> = {
  "synonyms.get": async (root: CompositionRoot, args) => ({
    synonyms: await (await root.manageSynonyms()).get(textArg(args, "catalogue")),
  }),
  "synonyms.set": async (root, args) => {
    const sets = args.synonyms;
    if (
      !Array.isArray(sets) ||
      !sets.every((set) => Array.isArray(set) && set.every((term) => typeof term === "string"))
    ) {
      throw new InvalidInput("Los sinónimos deben ser una lista de grupos, cada uno una lista de textos");
    }
    return { synonyms: await (await root.manageSynonyms()).replace(textArg(args, "catalogue"), sets as string[][]) };
  },
};
