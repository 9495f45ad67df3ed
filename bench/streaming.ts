/**
 * What streaming and the citation check cost per recommendation, apart from the model itself:
 * checkCitations on a whole text, the same text through CitationFilter in model-sized pieces, and
 * GeneratorChain.stream + withCheckedCitations over an in-memory link (per event).
 * Run by hand: `bun bench/streaming.ts`.
 */
import { GeneratorChain } from "../src/adapters/providers/generator-chain.ts";
import { CitationFilter, checkCitations, withCheckedCitations } from "../src/domain/citations.ts";
import type { GenerationEvent, Generator } from "../src/ports/generator.ts";

const IDS = [11, 12, 13, 14, 15];
const SENTENCE =
  "Para una cocina pequeña le recomiendo la Cafetera espresso compacta [#12], con espumador de leche, y como alternativa el Molinillo de muela cónica [#14] o la Tostadora [#99]. ";
const TEXT = SENTENCE.repeat(8); // about 1,400 characters, 24 markers
const PIECE = 4; // characters per streamed piece, about one token
const pieces = Array.from({ length: Math.ceil(TEXT.length / PIECE) }, (_, i) => TEXT.slice(i * PIECE, (i + 1) * PIECE));

function time(label: string, runs: number, run: () => unknown): void {
  for (let i = 0; i < Math.min(200, runs); i++) run();
  const started = performance.now();
  for (let i = 0; i < runs; i++) run();
  const micros = ((performance.now() - started) * 1000) / runs;
  console.log(`${label}: ${micros.toFixed(1)} µs`);
}

async function timeAsync(label: string, runs: number, run: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 50; i++) await run();
  const started = performance.now();
  for (let i = 0; i < runs; i++) await run();
  const micros = ((performance.now() - started) * 1000) / runs;
  console.log(`${label}: ${micros.toFixed(1)} µs`);
  return micros;
}

console.log(`text: ${TEXT.length} characters, ${pieces.length} pieces of ${PIECE}`);
time("checkCitations, whole text", 5_000, () => checkCitations(TEXT, IDS));
time("CitationFilter, in pieces", 5_000, () => {
  const filter = new CitationFilter(IDS);
  for (const piece of pieces) filter.push(piece);
  filter.end();
});

const link: Generator = {
  name: "memory",
  generate: async () => ({ text: TEXT, provider: "MEMORY", model: "m" }),
  async *stream(): AsyncGenerator<GenerationEvent> {
    for (const piece of pieces) yield { type: "delta", text: piece };
    yield { type: "done", recommendation: { text: TEXT.trim(), provider: "MEMORY", model: "m" }, position: 0 };
  },
};
const chain = new GeneratorChain([link]);
const drain = async (events: AsyncIterable<unknown>) => {
  for await (const _ of events);
};
const bare = await timeAsync("link stream alone, per recommendation", 500, () =>
  drain(link.stream({ query: "q", products: [] })),
);
const chained = await timeAsync("through GeneratorChain.stream + withCheckedCitations, per recommendation", 500, () =>
  drain(withCheckedCitations(chain.stream({ query: "q", products: [] }), IDS)),
);
console.log(`added per event: ${((chained - bare) / (pieces.length + 1)).toFixed(2)} µs`);
