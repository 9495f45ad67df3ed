/**
 * What the page makes of a shop's results: the well-known attributes (price with currency, brand,
 * availability, image, link), the highlighted snippets, and the facets' filter conditions. Pure
 * functions (no DOM), so that they are tested without a browser.
 */

export type AttributeValue = string | number | boolean | string[];

/** A search filter's condition on one attribute, as the service takes it. */
export type Condition = string | number | boolean | { gte?: number; lt?: number; lte?: number };

/** The facets as the service answers them (the domain's types: only types reach the page's bundle). */
import type { Facet, NumberFacet, ValueCounts } from "../domain/browse-results.ts";
import { availabilityLabel, formatAmount } from "../domain/shop-facts.ts";

export type { Facet, NumberFacet, ValueCounts };

/** The facets the page asks for, in the order it shows them, with their Spanish names. */
export const FACETS = [
  { key: "brand", label: "Marca" },
  { key: "category", label: "Categoría" },
  { key: "price", label: "Precio" },
  { key: "in_stock", label: "Disponibilidad" },
] as const;

/** A facet value as shown (booleans of `in_stock` as availability, numbers the Spanish way). */
export function valueLabel(key: string, value: string | number | boolean): string {
  if (typeof value === "boolean") return key === "in_stock" ? availabilityLabel(value) : value ? "Sí" : "No";
  if (typeof value === "number") return new Intl.NumberFormat("es").format(value);
  return value;
}

/**
 * A product's link, only http(s) (a `javascript:` or `data:` URL in a shop's attributes must never
 * become a link); undefined otherwise.
 */
export function safeLink(url: unknown, base: string): string | undefined {
  if (typeof url !== "string") return undefined;
  try {
    const parsed = new URL(url, base);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}

/** The meta element the service writes the page's image origins into (adapters/http/ui/ui-routes.ts). */
export const IMAGE_ORIGINS_META = "sku-search-image-origins";

/**
 * The origins the page's Content-Security-Policy lets pictures come from besides its own and data:
 * URLs (`https:`: any HTTPS origin), from the content of the IMAGE_ORIGINS_META element (none when
 * there is none).
 */
export function imageOriginsOf(content: string | null | undefined): string[] {
  return (content ?? "").split(" ").filter((source) => source !== "");
}

/**
 * A product's image when the page's Content-Security-Policy lets it load: from the service's own
 * origin, a data: image, or a source of `imageOrigins` (`https:` for any HTTPS URL, or an exact
 * origin). One from anywhere else would be refused (and logged as an error by the browser), so the
 * page leaves it out.
 */
export function allowedImage(url: unknown, origin: string, imageOrigins: readonly string[] = []): string | undefined {
  if (typeof url !== "string") return undefined;
  try {
    const parsed = new URL(url, origin);
    if (parsed.protocol === "data:" && /^data:image\//i.test(url)) return url;
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return undefined;
    if (parsed.origin === origin || imageOrigins.includes(parsed.origin)) return parsed.href;
    if (parsed.protocol === "https:" && imageOrigins.includes("https:")) return parsed.href;
  } catch {
    // Not a URL: no image.
  }
  return undefined;
}

/** A piece of a highlighted snippet: text, marked or not. */
export interface Segment {
  text: string;
  marked: boolean;
}

const ENTITIES: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'" };

/**
 * A snippet as the service writes it (HTML-escaped text with `<mark>` around the matched words)
 * as text segments, to be set as text (never parsed as HTML: the page's Trusted Types policy
 * allows no HTML from strings). Anything else that looks like a tag stays literal text.
 */
export function markedSegments(snippet: string): Segment[] {
  const segments: Segment[] = [];
  let marked = false;
  for (const piece of snippet.split(/(<mark>|<\/mark>)/)) {
    if (piece === "<mark>") marked = true;
    else if (piece === "</mark>") marked = false;
    else if (piece !== "") {
      segments.push({
        text: piece.replace(/&(?:amp|lt|gt|quot|#39);/g, (entity) => ENTITIES[entity] ?? entity),
        marked,
      });
    }
  }
  return segments;
}

/** The condition a click on a facet value adds, and how the active filter reads. */
export function valueCondition(key: string, value: string | number | boolean): { condition: Condition; label: string } {
  return { condition: value, label: valueLabel(key, value) };
}

/** The condition of a number facet's bucket (the last one includes its upper bound). */
export function bucketCondition(
  bucket: { from: number; to: number },
  last: boolean,
): { condition: Condition; label: string } {
  const label = `${formatAmount(bucket.from)} – ${formatAmount(bucket.to)}`;
  return { condition: last ? { gte: bucket.from, lte: bucket.to } : { gte: bucket.from, lt: bucket.to }, label };
}

export function isNumberFacet(facet: Facet): facet is NumberFacet {
  return !Array.isArray(facet);
}
