import { expect, test } from "bun:test";
import { availabilityLabel, formatPrice, shopFactsOf } from "../../src/domain/shop-facts.ts";

test("a product's shop facts are its well-known attributes of the right type; others are no facts", () => {
  expect(shopFactsOf({ price: 24.5, currency: "EUR", brand: "Bialetti", in_stock: false, color: "rojo" })).toEqual({
    price: 24.5,
    currency: "EUR",
    brand: "Bialetti",
    inStock: false,
  });
  expect(shopFactsOf({ price: "24,50", currency: "", brand: ["Acme"], in_stock: "sí" })).toEqual({});
  expect(shopFactsOf(undefined)).toEqual({});
  expect(shopFactsOf({ price: 1e308 })).toEqual({});
  expect(shopFactsOf({ price: -Number.MAX_SAFE_INTEGER })).toEqual({ price: -Number.MAX_SAFE_INTEGER });
});

test("a price with its currency, or as written when the code is unknown", () => {
  expect(formatPrice(59.9, "EUR")).toBe("59,90\u00a0€");
  expect(formatPrice(59.9, "euros")).toBe("59,90 euros");
  expect(formatPrice(1234.5, undefined)).toBe("1234,50");
});

test("availability in the page's words", () => {
  expect(availabilityLabel(true)).toBe("En stock");
  expect(availabilityLabel(false)).toBe("Agotado");
});
