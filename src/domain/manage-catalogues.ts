import type { CatalogueRepository, CatalogueSummary } from "../ports/catalogue-repository.ts";
import { type Clock, systemClock } from "../ports/clock.ts";
import { CATALOGUE_NAME } from "./api-keys.ts";
import { checkedEmbeddedAttributes } from "./attributes.ts";
import { type Caller, canSeeCatalogue, DEFAULT_CATALOGUE } from "./caller.ts";
import type { EmbedStaleProducts } from "./embed-stale-products.ts";
import { CatalogueExists, CatalogueNotFound, CatalogueProtected, Forbidden, InvalidInput } from "./errors.ts";

/** The detail of a name that breaks the rule (the same rule API keys check their catalogues by). */
export const INVALID_CATALOGUE_NAME =
  "El campo 'name' debe ser un nombre de catálogo: minúsculas, cifras, '_' y '-', de 1 a 63, sin empezar por '_' ni '-'";

/** How long a catalogue seen to exist is taken to exist without asking the database again. */
const REMEMBERED_MS = 5_000;

export interface ManageCataloguesDeps {
  catalogues: CatalogueRepository;
  /** Counts the products a change of settings leaves stale. */
  staleProducts: Pick<EmbedStaleProducts, "count">;
  clock?: Clock | undefined;
}

/** A catalogue after a change of its settings, with how many of its products are now stale. */
export interface ConfiguredCatalogue extends CatalogueSummary {
  /**
   * Products whose embedding was made from another text than the one the settings now give
   * (EmbedStaleProducts): each is embedded again at its next change or re-import, or all at once by
   * `reembed --catalogue`.
   */
  staleEmbeddings: number;
}

/**
 * ManageCatalogues: creating, listing, configuring and removing catalogues (POST/GET/PATCH/DELETE
 * /catalogues, `catalogues add|list|set|remove`), and whether one exists (every request inside a
 * catalogue asks).
 *
 * A caller limited to some catalogues sees only those: the others are listed for no one of them,
 * removing one is CatalogueNotFound as if it did not exist, and creating one outside its reach is
 * Forbidden. The default catalogue (the contract's `/products…`) cannot be removed.
 *
 * `exists` remembers a catalogue it found for a few seconds, so a busy catalogue costs no lookup per
 * request; one it did not find is looked for again each time (a catalogue just made elsewhere is seen
 * at once). A removed one may still pass here on another instance for those seconds: its products'
 * repository finds it gone in the same statement that enters it (CatalogueNotFound, 404 all the same).
 */
export class ManageCatalogues {
  private readonly clock: Clock;
  private readonly seen = new Map<string, number>();

  constructor(private readonly deps: ManageCataloguesDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  /** Makes an empty catalogue; `creator` (HTTP) may only make one it can see. */
  async create(name: string, creator?: Caller): Promise<CatalogueSummary> {
    if (!CATALOGUE_NAME.test(name)) throw new InvalidInput(INVALID_CATALOGUE_NAME);
    if (creator && !canSeeCatalogue(creator, name)) {
      throw new Forbidden(`Su credencial no alcanza el catálogo '${name}': no puede crearlo`);
    }
    if (!(await this.deps.catalogues.create(name))) throw new CatalogueExists(name);
    const created = (await this.deps.catalogues.list()).find((catalogue) => catalogue.name === name);
    // Removed again in between by someone else: it was made all the same.
    return created ?? { name, products: 0, createdAt: new Date(this.clock.now()), embeddedAttributes: [] };
  }

  /** The catalogues `viewer` can see (all without one), by name, with their product counts. */
  async list(viewer?: Caller): Promise<CatalogueSummary[]> {
    const all = await this.deps.catalogues.list();
    return viewer ? all.filter((catalogue) => canSeeCatalogue(viewer, catalogue.name)) : all;
  }

  /** The names of the catalogues `viewer` can see, by name (nothing counted: a page asks at each start). */
  async names(viewer: Caller): Promise<string[]> {
    return (await this.deps.catalogues.names()).filter((name) => canSeeCatalogue(viewer, name));
  }

  /**
   * Sets the attributes the catalogue embeds with each product's text (`embedded_attributes`:
   * checkedEmbeddedAttributes; `[]`: none, the default). Products written from then on are embedded
   * with them; the ones stored before are stale until embedded again, and the answer counts them.
   * `configurer` (HTTP) may only change a catalogue it can see (CatalogueNotFound otherwise).
   */
  async setEmbeddedAttributes(name: string, value: unknown, configurer?: Caller): Promise<ConfiguredCatalogue> {
    if (configurer && !canSeeCatalogue(configurer, name)) throw new CatalogueNotFound(name);
    const keys = checkedEmbeddedAttributes(value);
    if (!CATALOGUE_NAME.test(name) || !(await this.deps.catalogues.setEmbeddedAttributes(name, keys))) {
      throw new CatalogueNotFound(name);
    }
    const { products, stale } = await this.deps.staleProducts.count(name);
    const summary = (await this.deps.catalogues.list()).find((catalogue) => catalogue.name === name);
    return {
      ...(summary ?? { name, createdAt: new Date(this.clock.now()) }),
      products,
      embeddedAttributes: keys,
      staleEmbeddings: stale,
    };
  }

  /** Removes the catalogue and every product in it. */
  async remove(name: string, remover?: Caller): Promise<void> {
    if (remover && !canSeeCatalogue(remover, name)) throw new CatalogueNotFound(name);
    if (name === DEFAULT_CATALOGUE) throw new CatalogueProtected(name);
    this.seen.delete(name);
    if (!CATALOGUE_NAME.test(name) || !(await this.deps.catalogues.remove(name))) throw new CatalogueNotFound(name);
  }

  /** Whether the catalogue exists (remembered REMEMBERED_MS once found). */
  async exists(name: string): Promise<boolean> {
    if (name === DEFAULT_CATALOGUE) return true;
    if (!CATALOGUE_NAME.test(name)) return false;
    const now = this.clock.now();
    const until = this.seen.get(name);
    if (until !== undefined && until > now) return true;
    const found = await this.deps.catalogues.exists(name);
    if (found) {
      this.seen.set(name, now + REMEMBERED_MS);
    } else {
      this.seen.delete(name);
    }
    return found;
  }
}
