/** Catalogues' administration as admin operations (admin-channel.ts): `catalogues add|list|remove`. */
import type { CatalogueSummary } from "../../ports/catalogue-repository.ts";
import { type AdminOperation, textArg } from "./operation.ts";

/** A catalogue as the command line prints it (the JSON of GET /catalogues). */
function catalogueLine(catalogue: CatalogueSummary) {
  return { name: catalogue.name, products: catalogue.products, created_at: catalogue.createdAt.toISOString() };
}

export const CATALOGUE_OPERATIONS: Record<string, AdminOperation> = {
  "catalogues.add": async (root, args) =>
    catalogueLine(await (await root.manageCatalogues()).create(textArg(args, "name"))),
  "catalogues.list": async (root) => (await (await root.manageCatalogues()).list()).map(catalogueLine),
  "catalogues.remove": async (root, args) => {
    await (await root.manageCatalogues()).remove(textArg(args, "name"));
    return {};
  },
};
