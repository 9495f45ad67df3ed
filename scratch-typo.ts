import { typoVariants } from "./src/adapters/translation/spanish-text.ts";
import { SHOP_VOCABULARY } from "./src/adapters/translation/shop-vocabulary.ts";
const D = "/usr/share/apertium/apertium-eng-spa";
const words = process.argv.slice(2);
for (const word of words) {
  const variants = typoVariants(word);
  const proc = Bun.spawnSync(["lt-proc", `${D}/spa-eng.automorf.bin`], { stdin: Buffer.from(variants.join(" , ")) });
  const units = [...proc.stdout.toString().matchAll(/\^((?:\\.|[^\\/$])*)(?:\/((?:\\.|[^\\$])*))?\$/gu)].map(m => ({ s: m[1], known: m[2] !== undefined && !m[2].startsWith("*") })).filter(u => u.s !== ",");
  const known = units.length === variants.length ? variants.filter((_, i) => units[i].known) : ["(multiword)"];
  const vocab = variants.filter(v => SHOP_VOCABULARY.has(v));
  console.log(word, variants.length, "known:", known.join(" "), "| vocab:", vocab.join(" "));
}
