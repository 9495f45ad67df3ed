/** A catalogue as listed: its name, how many products it holds, when it was made, its settings. */
export interface CatalogueSummary {
  name: string;
  products: number;
  createdAt: Date;
  /** The attributes embedded with each product's text (none by default): domain/attributes.ts checkedEmbeddedAttributes. */
  embeddedAttributes: string[];
}

/**
 * The catalogues of the deployment: each holds products of its own (its skus unique within it),
 * reached through ProductCatalogues.in(name). Names are checked by the use case (manage-catalogues.ts).
 */
export interface CatalogueRepository {
  /** Makes the catalogue, empty; false (nothing changed) when one of that name exists. */
  create(name: string): Promise<boolean>;
  /** Every catalogue with its product count, by name. */
  list(): Promise<CatalogueSummary[]>;
  /** Every catalogue's name, in order (nothing counted). */
  names(): Promise<string[]>;
  /**
   * Removes the catalogue with all its products, its import jobs, its search vocabulary, synonyms
   * and search analytics; false when there was none.
   */
  remove(name: string): Promise<boolean>;
  /** Sets the attributes the catalogue embeds (checked by the use case); false when there is no such catalogue. */
  setEmbeddedAttributes(name: string, keys: readonly string[]): Promise<boolean>;
  /** Whether a catalogue of that name exists. */
  exists(name: string): Promise<boolean>;
}
