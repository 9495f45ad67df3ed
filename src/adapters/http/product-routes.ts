import { Elysia, t } from "elysia";
import type { Authenticate } from "../../domain/authenticate.ts";
import type { CreateProduct } from "../../domain/create-product.ts";
import { NotAuthenticated } from "../../domain/errors.ts";
import { PRODUCT_FIELD_MAX_LENGTH, type Product } from "../../domain/product.ts";
import { QUERY_MAX_LENGTH, SEARCH_LIMIT, type SearchAndRecommend } from "../../domain/search-and-recommend.ts";
import { readBody } from "./body.ts";
import { HttpProblem, ProblemBody } from "./errors.ts";
import { contextOf } from "./request-context.ts";

/** Elysia's t.Integer also takes numeric strings ("5"); a number that is a multiple of 1 does not. */
function integer(options: Parameters<typeof t.Number>[0] = {}) {
  return t.Number({ multipleOf: 1, ...options });
}

const NewProductBody = t.Object(
  {
    name: t.String({ maxLength: PRODUCT_FIELD_MAX_LENGTH.name }),
    description: t.String({ maxLength: PRODUCT_FIELD_MAX_LENGTH.description }),
    category: t.String({ maxLength: PRODUCT_FIELD_MAX_LENGTH.category }),
  },
  { additionalProperties: false },
);

const SearchBody = t.Object(
  {
    query: t.String({ maxLength: QUERY_MAX_LENGTH }),
    limit: t.Optional(
      integer({
        minimum: SEARCH_LIMIT.min,
        maximum: SEARCH_LIMIT.max,
        default: SEARCH_LIMIT.default,
        description: `Entero entre ${SEARCH_LIMIT.min} y ${SEARCH_LIMIT.max}`,
      }),
    ),
  },
  { additionalProperties: false },
);

const ProductResponse = t.Object({ id: integer(), name: t.String(), description: t.String(), category: t.String() });

const SearchResponse = t.Object({
  query: t.String(),
  recommendation: t.String(),
  cited_ids: t.Array(integer(), {
    description: "Ids de los productos de results que cita la recomendación (como [#id]), en orden de aparición",
  }),
  results: t.Array(
    t.Object({
      id: integer(),
      name: t.String(),
      description: t.String(),
      category: t.String(),
      score: t.Number({ description: "Similitud coseno con la consulta" }),
    }),
  ),
});

export interface ProductRoutesDeps {
  authenticate: Authenticate;
  createProduct: CreateProduct;
  search: SearchAndRecommend;
  searchRequiresAuth: boolean;
  maxBodyBytes: number;
}

/** POST /products/ (create) and POST /products/search, both JSON. */
export function productRoutes({
  authenticate,
  createProduct,
  search,
  searchRequiresAuth,
  maxBodyBytes,
}: ProductRoutesDeps) {
  // The bearer check runs in the parse stage, the first one Elysia runs per route: an anonymous
  // client gets 401 before its body is read or validated. The user is kept for the handler.
  const requireBearer = async ({ request }: { request: Request }) => {
    contextOf(request).user = await authenticate.userForToken(bearerToken(request.headers.get("authorization")));
  };
  const jsonBody = ({ request }: { request: Request }) => readBody(request, maxBodyBytes, ["json"]);
  // Our reader decides; the "json" after it never runs and only tells OpenAPI the content type.
  const authenticatedJson = [requireBearer, jsonBody, "json"] as const;
  const bearer = [{ bearerAuth: [] }];

  return new Elysia({ prefix: "/products" })
    .post(
      "/",
      async ({ body, request, set, status }) => {
        const { user, signal } = contextOf(request);
        const key = idempotencyKey(request.headers.get("idempotency-key"));
        const { product, replayed } = await createProduct.execute(body, {
          signal,
          idempotency: key === undefined || !user ? undefined : { userId: user.id, key },
        });
        if (replayed) set.headers["Idempotent-Replayed"] = "true";
        return status(201, productView(product));
      },
      {
        parse: [...authenticatedJson],
        body: NewProductBody,
        response: { 201: ProductResponse, 400: ProblemBody, 401: ProblemBody, 422: ProblemBody, 503: ProblemBody },
        detail: {
          tags: ["products"],
          summary: "Crear un producto (se calcula y guarda su embedding)",
          description:
            "Con la cabecera opcional Idempotency-Key (1 a 255 caracteres ASCII visibles), repetir la misma " +
            "petición durante 24 horas devuelve la primera respuesta sin crear otro producto; la misma clave " +
            "con otro cuerpo es un 422.",
          security: bearer,
        },
      },
    )
    .post(
      "/search",
      async ({ body, request }) => {
        const { query, recommendation, results, citedIds } = await search.execute(body, contextOf(request).signal);
        return {
          query,
          recommendation,
          results: results.map((hit) => ({ ...productView(hit), score: hit.score })),
          cited_ids: citedIds,
        };
      },
      {
        parse: searchRequiresAuth ? [...authenticatedJson] : [jsonBody, "json"],
        body: SearchBody,
        response: { 200: SearchResponse, 401: ProblemBody, 422: ProblemBody, 503: ProblemBody },
        detail: {
          tags: ["products"],
          summary: "Búsqueda semántica con recomendación generada",
          security: searchRequiresAuth ? bearer : [],
        },
      },
    );
}

/** Printable ASCII, 1 to 255 characters, as Stripe and the IETF idempotency-key draft use. */
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

/** The Idempotency-Key header's value, or undefined without one; 400 when it is malformed. */
function idempotencyKey(header: string | null): string | undefined {
  if (header === null) return undefined;
  const key = header.trim();
  if (!IDEMPOTENCY_KEY.test(key)) {
    throw new HttpProblem(400, "La cabecera Idempotency-Key debe tener entre 1 y 255 caracteres ASCII visibles");
  }
  return key;
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive). */
function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!match) throw new NotAuthenticated("El encabezado Authorization debe tener la forma 'Bearer <token>'");
  return match[1];
}

function productView({ id, name, description, category }: Product) {
  return { id, name, description, category };
}
