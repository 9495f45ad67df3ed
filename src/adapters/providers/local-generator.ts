import { citationMarker } from "../../domain/citations.ts";
import type { ScoredProduct } from "../../domain/product.ts";
import { availabilityLabel, formatAmount, formatPrice, shopFactsOf } from "../../domain/shop-facts.ts";
import type { GenerationEvent, Generator, Recommendation, RecommendationRequest } from "../../ports/generator.ts";
import { plain } from "./untrusted-text.ts";

export const LOCAL_GENERATOR_MODEL = "recomendador-local-v1";

export interface LocalGeneratorOptions {
  /**
   * Below this cosine the best match is called approximate. It depends on the embedder: with
   * all-MiniLM-L6-v2 on the eval set (bench/eval.ts), a relevant top hit scores 0.35–0.76 (median 0.50)
   * and an irrelevant one 0.25–0.59 (median 0.35), hence 0.45 by default. Set it for other embedders.
   */
  weakMatchBelow?: number;
}

/** Longest text taken from each field, in characters, so the recommendation stays short. */
const MAX_NAME = 80;
const MAX_CATEGORY = 40;
const MAX_QUERY = 80;
const MAX_CURRENCY = 12;
const MAX_ALTERNATIVES = 2;
/** An alternative is worth naming only when it scores at least this share of the best match. */
const ALTERNATIVE_MIN_SHARE = 0.75;

/**
 * The last-resort generator: deterministic Spanish text built from the retrieved products only,
 * no language model. It names the best match with its category, price and availability (those it
 * has; sold out, the nearest close match in stock first), one or two alternatives, and says
 * so when the matches are weak or there are none, and cites each product it names like a model
 * does (`«Name» [#12]`). Product and query text are treated as data: whitespace and control
 * characters collapsed, length bounded, quoted.
 */
export class LocalGenerator implements Generator {
  readonly name = `local/${LOCAL_GENERATOR_MODEL}`;
  private readonly weakMatchBelow: number;

  constructor(options: LocalGeneratorOptions = {}) {
    this.weakMatchBelow = options.weakMatchBelow ?? 0.45;
  }

  async generate({ query, products }: RecommendationRequest): Promise<Recommendation> {
    return { text: this.write(query, products), provider: "LOCAL", model: LOCAL_GENERATOR_MODEL };
  }

  /** The whole text in one delta: it is written at once. */
  async *stream(request: RecommendationRequest): AsyncGenerator<GenerationEvent> {
    const recommendation = await this.generate(request);
    yield { type: "delta", text: recommendation.text };
    yield { type: "done", recommendation, position: 0 };
  }

  private write(query: string, products: readonly ScoredProduct[]): string {
    const asked = plain(query, MAX_QUERY);
    const [best, ...rest] = products;
    if (!best) {
      const forQuery = asked ? ` para «${asked}»` : "";
      return `No he encontrado en el catálogo ningún producto${forQuery}. Pruebe a describir lo que busca con otras palabras.`;
    }

    const close = rest.filter((product) => product.score >= best.score * ALTERNATIVE_MIN_SHARE);
    const one = products.length === 1;
    if (best.score >= this.weakMatchBelow) {
      const opening = asked ? `Para «${asked}», le recomiendo` : "Le recomiendo";
      // Sold out, the best match gives way to the nearest one in stock that is close to it, if any.
      const inStock = shopFactsOf(best.attributes).inStock === false ? close.find(isInStock) : undefined;
      if (inStock) {
        const alternatives = close.filter((product) => product !== inStock).slice(0, MAX_ALTERNATIVES - 1);
        const sentences = [
          `${opening} ${describe(inStock)}: de los que hay en stock, es el más parecido a lo que busca.`,
          `${describe(best)} se parece más, pero está agotado.`,
        ];
        if (alternatives.length > 0)
          sentences.push(`También puede considerar ${alternativesText(inStock, alternatives)}.`);
        return sentences.join(" ");
      }
      const alternatives = close.slice(0, MAX_ALTERNATIVES);
      const others = alternativesText(best, alternatives);
      // "Of these results": a later page's best is not the catalogue's.
      const sentences = [`${opening} ${describe(best)}: de estos resultados, es el más parecido a lo que busca.`];
      if (others) {
        const allClose = alternatives.every((p) => p.score >= this.weakMatchBelow);
        const plural = alternatives.length > 1;
        const intro = allClose
          ? "También puede considerar"
          : `Como ${plural ? "alternativas" : "alternativa"}, aunque se ${plural ? "parecen" : "parece"} menos, tiene`;
        sentences.push(`${intro} ${others}.`);
      }
      return sentences.join(" ");
    }
    const others = alternativesText(best, close.slice(0, MAX_ALTERNATIVES));
    const sentences = [
      `No he encontrado una coincidencia clara${asked ? ` para «${asked}»` : ""}, así que ${one ? "el resultado es aproximado" : "los resultados son aproximados"}.`,
      `Lo más parecido es ${describe(best)}.`,
    ];
    if (others) sentences.push(`También podría mirar ${others}.`);
    sentences.push(`Compruebe que ${one ? "se ajusta" : "se ajustan"} a lo que necesita antes de decidirse.`);
    return sentences.join(" ");
  }
}

function isInStock(product: ScoredProduct): boolean {
  return shopFactsOf(product.attributes).inStock === true;
}

/** The alternatives as a list; their category is named once when it is the best match's own. */
function alternativesText(best: ScoredProduct, alternatives: readonly ScoredProduct[]): string {
  if (alternatives.length === 0) return "";
  const category = plain(best.category, MAX_CATEGORY);
  if (category && alternatives.every((p) => plain(p.category, MAX_CATEGORY) === category)) {
    return `${list(alternatives.map((product) => describe(product, { category: false })))}, de la misma categoría`;
  }
  return list(alternatives.map((product) => describe(product)));
}

/**
 * «Name» [#id] (categoría Category; 24,50 €; agotado): quoted, cited, and what it has of its
 * category (unless `category` is false), price and availability (shop-facts.ts).
 */
function describe(product: ScoredProduct, { category = true } = {}): string {
  const { price, currency, inStock } = shopFactsOf(product.attributes);
  const categoryName = category ? plain(product.category, MAX_CATEGORY) : "";
  const details = [
    categoryName && `categoría ${categoryName}`,
    // Without a currency a bare number would not read as a price.
    price !== undefined &&
      (currency === undefined ? `precio ${formatAmount(price)}` : formatPrice(price, plain(currency, MAX_CURRENCY))),
    inStock !== undefined && availabilityLabel(inStock).toLowerCase(),
  ].filter((detail): detail is string => typeof detail === "string" && detail !== "");
  const name = `«${plain(product.name, MAX_NAME) || "sin nombre"}» ${citationMarker(product.id)}`;
  return details.length > 0 ? `${name} (${details.join("; ")})` : name;
}

/** "a", "a y b", "a, b y c". */
function list(items: readonly string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} y ${items.at(-1)}`;
}
