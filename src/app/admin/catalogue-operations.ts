/**
 * Catalogues' administration as admin operations (admin-channel.ts): `catalogues add|list|set|remove`,
 * and `reembed --catalogue` (the stale products embedded again, in the service that holds the
 * embedded database when it runs).
 */
import type { CatalogueSummary } from "../../ports/catalogue-repository.ts";
import { type AdminOperation, textArg, textListArg } from "./operation.ts";

/** A catalogue as the command line prints it (the JSON of GET /catalogues). */
function catalogueLine(catalogue: CatalogueSummary) {
  return {
    name: catalogue.name,
    products: catalogue.products,
    created_at: catalogue.createdAt.toISOString(),
    embedded_attributes: catalogue.embeddedAttributes,
  };
}

export const CATALOGUE_OPERATIONS: Record<string, AdminOperation> = {
  "catalogues.add": async (root, args) =>
    catalogueLine(await (await root.manageCatalogues()).create(textArg(args, "name"))),
  "catalogues.list": async (root) => (await (await root.manageCatalogues()).list()).map(catalogueLine),
  "catalogues.set": async (root, args) => {
    const configured = await (await root.manageCatalogues()).setEmbeddedAttributes(
      textArg(args, "name"),
      textListArg(args, "embedded_attributes"),
    );
    return { ...catalogueLine(configured), stale_embeddings: configured.staleEmbeddings };
  },
  "catalogues.reembed": async (root, args, signal) => {
    const { products, embedded, changedMeanwhile } = await (await root.embedStaleProducts()).execute(
      textArg(args, "name"),
      signal ? { signal } : {},
    );
    return { products, embedded, changed_meanwhile: changedMeanwhile };
  },
  "catalogues.remove": async (root, args) => {
    await (await root.manageCatalogues()).remove(textArg(args, "name"));
    return {};
  },
};
