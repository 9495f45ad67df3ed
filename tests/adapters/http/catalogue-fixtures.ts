/** Products the catalogue, search and import tests store, and how they store them. */
import { expect } from "bun:test";
import type { Harness } from "./harness.ts";

export const LAPTOP = {
  name: "Portátil gamer",
  description: "laptop potente para videojuegos",
  category: "informática",
};
export const MOUSE = { name: "Ratón inalámbrico", description: "mouse ergonómico bluetooth", category: "periféricos" };
export const CHAIR = { name: "Silla de oficina", description: "asiento ergonómico con respaldo", category: "muebles" };

/** Creates one product through POST /products/ (201 expected); its id. */
export async function create(h: Harness, product: object) {
  const response = await h.call("POST", "/products/", { token: h.token, json: product });
  expect(response.status).toBe(201);
  return response.json as { id: number };
}

export async function addProducts(h: Harness, ...products: object[]) {
  for (const product of products) await create(h, product);
}
