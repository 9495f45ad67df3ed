import type { Attributes } from "./attributes.ts";

/**
 * What a shopper asks of a product besides its text, from the well-known attributes (README:
 * Attributes): `price` (a number) with `currency`, `brand`, `in_stock`. The page shows them, and
 * the recommendation may speak of them; an attribute of another type (or a price past 2^53) is no fact.
 */
export interface ShopFacts {
  price?: number;
  currency?: string;
  brand?: string;
  inStock?: boolean;
}

export function shopFactsOf(attributes: Attributes | undefined): ShopFacts {
  const facts: ShopFacts = {};
  if (!attributes) return facts;
  const { price, currency, brand, in_stock: inStock } = attributes;
  // Past the integers a number holds exactly, no price: 1e308 would be written out in 416 characters.
  if (typeof price === "number" && Math.abs(price) <= Number.MAX_SAFE_INTEGER) facts.price = price;
  if (typeof currency === "string" && currency !== "") facts.currency = currency;
  if (typeof brand === "string" && brand !== "") facts.brand = brand;
  if (typeof inStock === "boolean") facts.inStock = inStock;
  return facts;
}

const twoDecimals = new Intl.NumberFormat("es", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** An amount as Spanish readers write it, without currency ("59,90"; a price bucket's bounds). */
export function formatAmount(value: number): string {
  return twoDecimals.format(value);
}

/** A price as Spanish readers write it, with its currency ("59,90 €"); a code Intl does not know stays as written. */
export function formatPrice(price: number, currency: unknown): string {
  if (typeof currency === "string" && currency !== "") {
    try {
      return new Intl.NumberFormat("es", { style: "currency", currency }).format(price);
    } catch {
      return `${formatAmount(price)} ${currency}`;
    }
  }
  return formatAmount(price);
}

export function availabilityLabel(inStock: boolean): string {
  return inStock ? "En stock" : "Agotado";
}
