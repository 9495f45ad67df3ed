/**
 * The search: the form (query, number of results, mode and its weight, categories; hybrid by
 * default), the products as soon as the service finds them, and the recommendation as it is
 * written, streamed as server-sent events, with its label and its citations linked to the products
 * they name. Opening a product (its name, or a citation of it) is reported as a click on that
 * search's result (POST /events), for the shop's search analytics. Browsing like a shop: every
 * search asks for its facets, highlights and a page (offset) of its relevant results; a facet value
 * chosen becomes a filter (kept for the next queries until removed), the sort menu orders them and
 * previous/next page through them, each by searching the submitted form again.
 */
import { QUERY_MAX_LENGTH, SEARCH_LIMIT } from "../domain/search-and-recommend.ts";
import { availabilityLabel, formatPrice, shopFactsOf } from "../domain/shop-facts.ts";
import type { Api } from "./api.ts";
import {
  type AttributeValue,
  allowedImage,
  bucketCondition,
  type Condition,
  FACETS,
  type Facet,
  IMAGE_ORIGINS_META,
  imageOriginsOf,
  isNumberFacet,
  markedSegments,
  safeLink,
  valueCondition,
} from "./browse.ts";
import { byId, formatCount, formatScore, h, isAbort, messageOf, say } from "./dom.ts";
import { serverEvents } from "./event-stream.ts";
import { citedIds, segmentsOf, splitLabel, type Writer } from "./recommendation.ts";

interface Hit {
  id: number;
  name: string;
  description: string;
  category: string;
  sku?: string;
  score: number;
  fused_score?: number;
  attributes?: Record<string, AttributeValue>;
  highlights?: { name: string; description: string };
}

export interface Category {
  name: string;
  products: number;
}

const weight = new Intl.NumberFormat("es", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const formatWeight = (value: number) => weight.format(value);

const EMPTY_CATALOGUE = " El catálogo está vacío: añade productos en «Productos» o carga un archivo en «Importar».";

type DoneEvent = Writer & { recommendation: string; cited_ids: number[] };

interface ResultsEvent {
  search_id: string;
  query: string;
  results: Hit[];
  total?: number;
  total_relation?: "eq" | "gte";
  facets?: Record<string, Facet>;
}

/** A filter the shopper chose in the facets: its condition and how it reads. */
interface ActiveFilter {
  key: string;
  condition: Condition;
  label: string;
}

export class SearchView {
  private readonly form = byId("search-form", HTMLFormElement);
  private readonly query = byId("search-query", HTMLInputElement);
  private readonly limit = byId("search-limit", HTMLInputElement);
  private readonly mode = byId("search-mode", HTMLSelectElement);
  private readonly alpha = byId("search-alpha", HTMLInputElement);
  private readonly alphaValue = byId("search-alpha-value", HTMLOutputElement);
  private readonly categories = byId("search-categories", HTMLFieldSetElement);
  private readonly categoryList = byId("search-categories-list", HTMLDivElement);
  private readonly scope = byId("search-scope", HTMLParagraphElement);
  private readonly error = byId("search-error", HTMLParagraphElement);
  private readonly status = byId("search-status", HTMLParagraphElement);
  private readonly output = byId("search-output", HTMLDivElement);
  private readonly label = byId("recommendation-label", HTMLSpanElement);
  private readonly state = byId("recommendation-state", HTMLParagraphElement);
  private readonly text = byId("recommendation-text", HTMLParagraphElement);
  private readonly results = byId("results", HTMLOListElement);
  private readonly facetGroups = byId("facet-groups", HTMLDivElement);
  private readonly activeFilters = byId("active-filters", HTMLDivElement);
  private readonly activeFilterList = byId("active-filter-list", HTMLUListElement);
  /** Where product pictures may come from besides this origin (the service writes them into the page). */
  private readonly imageOrigins = imageOriginsOf(
    document.querySelector(`meta[name="${IMAGE_ORIGINS_META}"]`)?.getAttribute("content"),
  );
  private readonly sort = byId("search-sort", HTMLSelectElement);
  private readonly paging = byId("paging", HTMLElement);
  private readonly previous = byId("page-previous", HTMLButtonElement);
  private readonly next = byId("page-next", HTMLButtonElement);
  private readonly pageStatus = byId("page-status", HTMLParagraphElement);

  /** The form as last sent: paging, sorting and facets search it again (not what is typed since). */
  private submitted: Record<string, unknown> | undefined;
  /** The facet values chosen, one per attribute, AND-ed into the search's filter. */
  private filters: ActiveFilter[] = [];
  private offset = 0;
  /** The last answer's total of relevant results. */
  private total = 0;

  /** The search under way, aborted by the next one. */
  private running: AbortController | undefined;
  private written = "";
  /** The catalogue has no products (as of the last categories read): an empty search says where to add some. */
  private catalogueEmpty = false;
  private readonly hits = new Map<number, { hit: Hit; item: HTMLLIElement }>();
  /** The shown results' search, and the products of it already reported as opened. */
  private searchId: string | undefined;
  private readonly opened = new Set<number>();

  constructor(private readonly api: Api) {
    this.query.maxLength = QUERY_MAX_LENGTH;
    this.limit.min = String(SEARCH_LIMIT.min);
    this.limit.max = String(SEARCH_LIMIT.max);
    this.limit.value = String(SEARCH_LIMIT.default);
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submitted = this.formBody();
      this.offset = 0;
      void this.search();
    });
    this.sort.addEventListener("change", () => this.again(0));
    // Paging replaces the results under the reader: the keyboard goes back to their heading.
    this.previous.addEventListener("click", () => {
      this.again(Math.max(0, this.offset - this.pageSize()));
      byId("results-title", HTMLHeadingElement).focus();
    });
    this.next.addEventListener("click", () => {
      this.again(this.offset + this.pageSize());
      byId("results-title", HTMLHeadingElement).focus();
    });
    this.mode.addEventListener("change", () => {
      this.alpha.disabled = this.mode.value !== "hybrid";
    });
    this.alpha.disabled = this.mode.value !== "hybrid";
    // Following a citation opens the product it names.
    this.text.addEventListener("click", (event) => {
      const cite = (event.target as Element | null)?.closest?.("a.cite");
      const id = Number(cite?.getAttribute("href")?.replace("#result-", ""));
      if (Number.isInteger(id) && this.hits.has(id)) this.open(id, true);
    });
    this.alpha.addEventListener("input", () => {
      this.alphaValue.value = formatWeight(Number(this.alpha.value));
    });
    say(this.error, "");
    say(this.status, "");
  }

  focus(): void {
    this.query.focus();
  }

  /** Stops the search under way (logging out). */
  stop(): void {
    this.running?.abort();
  }

  /**
   * A new catalogue (or session): the search under way stops, the last results go, and a search
   * can be made (`catalogue`) or not (undefined: the credential sees no catalogue that exists).
   * `filter`: the categories a tenant token narrows every search to, said above the results.
   */
  reset(catalogue: string | undefined, filter: { category?: string[] } | null): void {
    this.stop();
    this.output.hidden = true;
    this.results.replaceChildren();
    this.hits.clear();
    this.searchId = undefined;
    this.submitted = undefined;
    this.filters = [];
    this.offset = 0;
    this.sort.value = "";
    say(this.error, "");
    say(this.status, "");
    for (const control of this.form.elements) (control as HTMLInputElement).disabled = catalogue === undefined;
    if (catalogue !== undefined) this.alpha.disabled = this.mode.value !== "hybrid";
    const narrowed = filter?.category;
    const lines = [
      catalogue === undefined ? "Esta credencial no ve ningún catálogo que exista: no hay dónde buscar." : "",
      narrowed
        ? `Esta credencial busca solo en ${narrowed.length === 1 ? "la categoría" : "las categorías"} ${narrowed.map((name) => `«${name}»`).join(", ")}.`
        : "",
    ].filter(Boolean);
    say(this.scope, lines.join(" "));
    this.scope.hidden = lines.length === 0;
  }

  /**
   * The categories to filter by, keeping those already ticked; null when the credential may not
   * read them (GET …/categories takes products.read): then there is no category list to pick from.
   */
  setCategories(categories: readonly Category[] | null): void {
    this.categories.hidden = categories === null;
    if (categories === null) {
      this.catalogueEmpty = false;
      this.categoryList.replaceChildren();
      return;
    }
    this.catalogueEmpty = categories.length === 0;
    const ticked = new Set(this.checkedCategories());
    this.categoryList.replaceChildren(
      ...categories.map((category, i) => {
        const input = h("input", { attrs: { type: "checkbox", id: `search-category-${i}`, value: category.name } });
        input.checked = ticked.has(category.name);
        return h(
          "div",
          { className: "check" },
          input,
          h(
            "label",
            { attrs: { for: input.id } },
            category.name,
            h("span", { className: "count", text: ` (${formatCount(category.products)})` }),
          ),
        );
      }),
    );
    if (categories.length === 0)
      this.categoryList.append(h("p", { className: "hint", text: "El catálogo está vacío." }));
  }

  private checkedCategories(): string[] {
    return [...this.categoryList.querySelectorAll<HTMLInputElement>("input:checked")].map((input) => input.value);
  }

  private formBody(): Record<string, unknown> {
    const categories = this.checkedCategories();
    const mode = this.mode.value;
    return {
      query: this.query.value,
      limit: Number(this.limit.value),
      ...(categories.length > 0 ? { category: categories } : {}),
      mode,
      ...(mode === "hybrid" ? { alpha: Number(this.alpha.value) } : {}),
    };
  }

  /** The submitted form with the page asked for, its order, the facets' filters and the facets to count. */
  private body(): Record<string, unknown> {
    const [sortKey, direction] = this.sort.value.split(":");
    return {
      ...this.submitted,
      offset: this.offset,
      ...(sortKey && direction ? { sort: [{ [sortKey]: direction }] } : {}),
      ...(this.filters.length > 0
        ? { filter: Object.fromEntries(this.filters.map(({ key, condition }) => [key, condition])) }
        : {}),
      facets: FACETS.map(({ key }) => key),
      highlight: true,
    };
  }

  private pageSize(): number {
    return Number(this.submitted?.limit ?? SEARCH_LIMIT.default);
  }

  /** The last search again, from `offset` (a page, a new order, a filter added or removed). */
  private again(offset: number): void {
    if (this.submitted === undefined) return;
    this.offset = offset;
    void this.search();
  }

  private addFilter(filter: ActiveFilter): void {
    this.filters = [...this.filters.filter(({ key }) => key !== filter.key), filter];
    this.again(0);
    byId("facets-title", HTMLHeadingElement).focus();
  }

  private removeFilter(key: string): void {
    this.filters = this.filters.filter((filter) => filter.key !== key);
    this.again(0);
    // The removed filter's button is gone: the keyboard goes on from the sidebar's heading.
    byId("facets-title", HTMLHeadingElement).focus();
  }

  private async search(): Promise<void> {
    this.running?.abort();
    const running = new AbortController();
    this.running = running;
    const { signal } = running;
    say(this.error, "");
    say(this.status, "Buscando…");
    let finished = false;
    try {
      const response = await this.api.request("/products/search", {
        method: "POST",
        headers: { Accept: "text/event-stream", "Content-Type": "application/json" },
        body: JSON.stringify(this.body()),
        signal,
      });
      if (!response.body || !(response.headers.get("content-type") ?? "").includes("text/event-stream")) {
        // Not streamed (something between us and the service took it whole): the JSON answer.
        const answer = (await response.json()) as ResultsEvent & DoneEvent;
        this.showResults(answer);
        this.finish({ ...answer, provider: null, model: null, position: null });
        return;
      }
      for await (const { event, data } of serverEvents(response.body)) {
        if (signal.aborted) return;
        const payload = JSON.parse(data);
        if (event === "results") this.showResults(payload);
        else if (event === "delta") this.write(this.written + payload.text);
        else if (event === "reset") {
          this.write("");
          say(this.state, "Un redactor ha fallado; la escribe el siguiente…");
        } else if (event === "done") {
          finished = true;
          this.finish(payload);
        } else if (event === "failure") {
          finished = true;
          this.fail(payload.detail);
        }
      }
      if (!finished && !signal.aborted) this.fail("La conexión se cortó antes de terminar la recomendación.");
    } catch (error) {
      if (signal.aborted || isAbort(error)) return;
      if (this.output.hidden) say(this.status, "");
      if (this.output.hidden) say(this.error, messageOf(error));
      else this.fail(messageOf(error));
    } finally {
      if (this.running === running) this.running = undefined;
    }
  }

  private showResults({
    search_id: searchId,
    query,
    results: hits,
    total = hits.length,
    total_relation: relation = "eq",
    facets = {},
  }: ResultsEvent): void {
    this.hits.clear();
    this.searchId = searchId;
    this.opened.clear();
    this.total = total;
    this.results.replaceChildren(...hits.map((hit) => this.resultItem(hit)));
    this.output.hidden = false;
    const atLeast = relation === "gte" ? "más de " : "";
    const whole = this.offset === 0 && hits.length >= total;
    say(
      this.status,
      hits.length === 0
        ? `Ningún producto para «${query}».${this.catalogueEmpty && this.filters.length === 0 ? EMPTY_CATALOGUE : ""}`
        : whole
          ? `${formatCount(hits.length)} ${hits.length === 1 ? "producto" : "productos"} para «${query}».`
          : `Del ${formatCount(this.offset + 1)} al ${formatCount(this.offset + hits.length)} de ${atLeast}${formatCount(total)} productos para «${query}».`,
    );
    this.showPaging(hits.length);
    this.showFacets(facets);
    this.label.hidden = true;
    this.state.classList.remove("error");
    this.text.setAttribute("aria-busy", "true");
    say(this.state, hits.length === 0 ? "" : "Escribiendo la recomendación…");
    this.write("");
  }

  private showPaging(shown: number): void {
    const size = this.pageSize();
    this.paging.hidden = this.offset === 0 && shown >= this.total;
    this.previous.disabled = this.offset === 0;
    this.next.disabled = this.offset + size >= this.total;
    const pages = Math.max(1, Math.ceil(this.total / size));
    say(this.pageStatus, `Página ${formatCount(Math.floor(this.offset / size) + 1)} de ${formatCount(pages)}`);
  }

  /** The active filters (each a button that removes it) and the facets' values with their counts. */
  private showFacets(facets: Record<string, Facet>): void {
    this.activeFilterList.replaceChildren(
      ...this.filters.map(({ key, label }) => {
        const name = FACETS.find((facet) => facet.key === key)?.label ?? key;
        const remove = h(
          "button",
          { className: "filter-chip", attrs: { type: "button", "aria-label": `Quitar filtro ${name}: ${label}` } },
          `${name}: ${label}`,
          h("span", { className: "filter-chip-x", text: " ×", attrs: { "aria-hidden": "true" } }),
        );
        remove.addEventListener("click", () => this.removeFilter(key));
        return h("li", {}, remove);
      }),
    );
    this.activeFilters.hidden = this.filters.length === 0;
    const groups = FACETS.flatMap(({ key, label }) => {
      const facet = facets[key];
      // A facet already chosen is shown as an active filter, not as one value left to pick.
      if (facet === undefined || this.filters.some((filter) => filter.key === key)) return [];
      const options = isNumberFacet(facet)
        ? facet.buckets
            .map((bucket, i) => ({ ...bucketCondition(bucket, i === facet.buckets.length - 1), count: bucket.count }))
            .filter(({ count }) => count > 0)
        : facet.map(({ value, count }) => ({ ...valueCondition(key, value), count }));
      if (options.length === 0) return [];
      const titleId = `facet-${key}-title`;
      return [
        h(
          "section",
          { className: "facet", attrs: { "aria-labelledby": titleId } },
          h("h3", { text: label, attrs: { id: titleId } }),
          h(
            "ul",
            { className: "facet-values" },
            ...options.map(({ condition, label: valueLabel, count }) => {
              const button = h(
                "button",
                { className: "facet-value", attrs: { type: "button", "data-facet": key } },
                h("span", { className: "facet-label", text: valueLabel }),
                h("span", { className: "count", text: ` (${formatCount(count)})` }),
              );
              button.addEventListener("click", () => this.addFilter({ key, condition, label: valueLabel }));
              return h("li", {}, button);
            }),
          ),
        ),
      ];
    });
    this.facetGroups.replaceChildren(...groups);
    if (groups.length === 0 && this.filters.length === 0) {
      this.facetGroups.append(
        h("p", { className: "hint", text: "Estos resultados no tienen nada por lo que filtrar." }),
      );
    }
  }

  private resultItem(hit: Hit): HTMLLIElement {
    const hybrid = hit.fused_score !== undefined;
    const score = h(
      "p",
      { className: "score" },
      h("span", { className: "score-label", text: hybrid ? "Puntuación" : "Similitud" }),
      " ",
      h("span", { className: "score-value", text: formatScore(hit.fused_score ?? hit.score) }),
    );
    if (hybrid) score.append(h("span", { className: "score-detail", text: ` · similitud ${formatScore(hit.score)}` }));
    const meta = [hit.category, hit.sku === undefined ? "" : `SKU ${hit.sku}`].filter(Boolean).join(" · ");
    const description = h(
      "p",
      { className: "result-description", attrs: { id: `result-description-${hit.id}` } },
      ...(hit.highlights ? marked(hit.highlights.description) : [hit.description]),
    );
    const open = h(
      "button",
      {
        className: "result-open",
        attrs: { type: "button", "aria-expanded": "false", "aria-controls": description.id },
      },
      ...(hit.highlights ? marked(hit.highlights.name) : [hit.name]),
    );
    open.addEventListener("click", () => this.open(hit.id, open.getAttribute("aria-expanded") !== "true"));
    const item = h(
      "li",
      { className: "card result", attrs: { id: `result-${hit.id}`, tabindex: "-1", "data-id": String(hit.id) } },
      h("div", { className: "result-head" }, h("h3", { className: "result-name" }, open), score),
      h("p", { className: "result-meta", text: meta }),
      ...this.shopDetails(hit),
      description,
      h("p", { className: "cited-badge", text: "Citado en la recomendación" }),
    );
    const image = allowedImage(hit.attributes?.image_url, location.origin, this.imageOrigins);
    if (image !== undefined) {
      item.classList.add("with-image");
      item.prepend(
        h("img", { className: "result-image", attrs: { src: image, alt: hit.name, width: "96", height: "96" } }),
      );
    }
    this.hits.set(hit.id, { hit, item });
    return item;
  }

  /** A result's price, brand, availability and link to the shop's page, those it has. */
  private shopDetails({ attributes = {}, name }: Hit): HTMLElement[] {
    const { price, currency, brand, inStock } = shopFactsOf(attributes);
    const facts = h("p", { className: "result-shop" });
    if (price !== undefined) facts.append(h("span", { className: "result-price", text: formatPrice(price, currency) }));
    if (brand !== undefined) facts.append(h("span", { className: "result-brand", text: brand }));
    if (inStock !== undefined) {
      facts.append(
        h("span", {
          className: `result-stock ${inStock ? "in-stock" : "out-of-stock"}`,
          text: availabilityLabel(inStock),
        }),
      );
    }
    const link = safeLink(attributes.url, location.href);
    if (link !== undefined) {
      facts.append(
        h("a", {
          className: "result-link",
          text: "Ver en la tienda",
          attrs: {
            href: link,
            rel: "noopener noreferrer",
            target: "_blank",
            "aria-label": `Ver en la tienda: ${name}`,
          },
        }),
      );
    }
    return facts.childElementCount > 0 ? [facts] : [];
  }

  /**
   * Shows a result whole (or back to its first lines); the first opening of each product of a
   * search is reported to the service as a click on that search's result. A report that fails
   * changes nothing on the page: analytics are not worth an error message.
   */
  private open(id: number, opened: boolean): void {
    const item = this.hits.get(id)?.item;
    if (!item) return;
    item.classList.toggle("open", opened);
    item.querySelector(".result-open")?.setAttribute("aria-expanded", String(opened));
    if (!opened || this.searchId === undefined || this.opened.has(id)) return;
    this.opened.add(id);
    const event = { search_id: this.searchId, product_id: id, type: "click" };
    this.api.json("/events", "POST", event).catch(() => {});
  }

  /** Shows the recommendation written so far, citations as links, and highlights the products it cites. */
  private write(text: string, cited: readonly number[] = citedIds(text)): void {
    this.written = text;
    this.text.replaceChildren(
      ...segmentsOf(text).map((segment) => {
        if (segment.kind === "text") return segment.text;
        const name = this.hits.get(segment.id)?.hit.name ?? `producto ${segment.id}`;
        // The name read out starts with the text shown ("#3, Cafetera espresso"), so that one who
        // sees the link can say or find it by what it shows (WCAG 2.5.3, axe's label-content-name-mismatch).
        return h("a", {
          className: "cite",
          text: `#${segment.id}`,
          attrs: { href: `#result-${segment.id}`, title: name, "aria-label": `#${segment.id}, ${name}` },
        });
      }),
    );
    const citedSet = new Set(cited);
    for (const [id, { item }] of this.hits) item.classList.toggle("cited", citedSet.has(id));
  }

  private finish(done: DoneEvent): void {
    const { text, label } = splitLabel(done.recommendation, done);
    this.write(text, done.cited_ids);
    // Two pieces that wrap as wholes: on a phone the writer goes under "Escrita por", not cut at a hyphen.
    this.label.replaceChildren(...(label ? [h("span", { text: "Escrita por " }), h("span", { text: label })] : []));
    this.label.hidden = label === null;
    this.text.setAttribute("aria-busy", "false");
    say(this.state, "");
  }

  private fail(detail: string): void {
    this.text.setAttribute("aria-busy", "false");
    say(this.state, `No se ha podido terminar la recomendación: ${detail}`);
    this.state.classList.add("error");
  }
}

/** A highlighted snippet as text nodes and <mark> elements (never parsed as HTML). */
function marked(snippet: string): (Node | string)[] {
  return markedSegments(snippet).map(({ text, marked }) => (marked ? h("mark", { text }) : text));
}
