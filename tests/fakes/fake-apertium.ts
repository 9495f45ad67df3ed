/**
 * Stands in for Apertium's programs in tests: reads NUL-terminated segments on stdin and answers
 * each with a NUL-terminated segment, like a stage run with `-z`.
 *
 *   fake-apertium.ts [-z] analyse es|en   `^word/word<n>$` for the words of its small lexicon, `^word/*word$` otherwise
 *   fake-apertium.ts [-z] translate       word-for-word Spanish → English (plain text or analyser output in),
 *                                         unknown words marked `*` as Apertium does
 *   fake-apertium.ts [-z] echo            the segment as it came
 *
 * Segments with these words misbehave: "cuelga" (never answered), "revienta" (half an answer,
 * then the process exits), "despacio" (answered only once the file FAKE_APERTIUM_HOLD names
 * exists, so that a test decides when, rather than guessing how long is long enough). With
 * FAKE_APERTIUM_LOG set, every segment received is appended to that file.
 */
import { appendFileSync, existsSync } from "node:fs";

const SPANISH: Record<string, string> = {
  funda: "cover",
  de: "of",
  terciopelo: "velvet",
  para: "for",
  el: "the",
  la: "the",
  sofá: "sofa",
  casa: "house",
  cafetera: "coffee maker",
  italiana: "Italian",
  precio: "price",
  oferta: "offer",
  que: "that",
  mi: "my",
  perro: "dog",
  champú: "shampoo",
  cuelga: "hangs",
  revienta: "bursts",
  despacio: "slowly",
  // The shop vocabulary's placeholder nouns (shop-vocabulary.ts), which the real Apertium knows too.
  ornitorrinco: "platypus",
  ornitorrincos: "platypuses",
  tejón: "badger",
  tejones: "badgers",
  erizo: "hedgehog",
  erizos: "hedgehogs",
  castor: "beaver",
  castores: "beavers",
  nutria: "otter",
  nutrias: "otters",
  comadreja: "weasel",
  comadrejas: "weasels",
  morsa: "walrus",
  morsas: "walruses",
};
const ENGLISH = new Set(["the", "velvet", "cover", "for", "sofa", "coffee", "maker", "my", "dog", "shampoo", "price"]);

// Options (-z, the mode file's -g) are taken and ignored, as the real programs take theirs.
const [mode = "echo", language = "es"] = process.argv.slice(2).filter((arg) => !arg.startsWith("-"));
const log = process.env.FAKE_APERTIUM_LOG;
const hold = process.env.FAKE_APERTIUM_HOLD;

function analyse(segment: string): string {
  const known = (word: string) => (language === "es" ? word.toLowerCase() in SPANISH : ENGLISH.has(word.toLowerCase()));
  return segment.replace(/\p{L}+/gu, (word) => (known(word) ? `^${word}/${word}<n>$` : `^${word}/*${word}$`));
}

function translate(segment: string): string {
  const plain = segment.replace(/\^((?:\\.|[^/$\\])*)(?:\/(?:\\.|[^$\\])*)?\$/gu, "$1");
  return plain.replace(/\p{L}+/gu, (word) => SPANISH[word.toLowerCase()] ?? `*${word}`);
}

const answer = (segment: string) =>
  mode === "analyse" ? analyse(segment) : mode === "translate" ? translate(segment) : segment;

const decoder = new TextDecoder();
let pending = "";
for await (const chunk of Bun.stdin.stream()) {
  pending += decoder.decode(chunk, { stream: true });
  let nul = pending.indexOf("\u0000");
  while (nul !== -1) {
    const segment = pending.slice(0, nul);
    pending = pending.slice(nul + 1);
    if (log) appendFileSync(log, `${mode}\t${segment}\n`);
    if (segment.includes("cuelga")) {
      await Bun.sleep(3_600_000); // never answers
    }
    if (segment.includes("revienta")) {
      process.stdout.write(answer(segment).slice(0, 3));
      process.exit(3);
    }
    // Nothing announces a file's creation to this process: it looks every 10 ms.
    while (segment.includes("despacio") && hold !== undefined && !existsSync(hold)) await Bun.sleep(10);
    process.stdout.write(`${answer(segment)}\u0000`);
    nul = pending.indexOf("\u0000");
  }
}
