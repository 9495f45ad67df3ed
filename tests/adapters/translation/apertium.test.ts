import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ApertiumTranslator, findApertium, parseMode } from "../../../src/adapters/translation/apertium.ts";
import { PipeUnavailable } from "../../../src/adapters/translation/nul-pipe.ts";
import { ShopVocabulary } from "../../../src/adapters/translation/shop-vocabulary.ts";
import { FakeTimers } from "../../fakes/fake-timers.ts";
import { blockHooks } from "../../support/skipped-blocks.ts";
import { useTempDirs } from "../../support/temp-dirs.ts";
import { waitUntil } from "../../support/wait-until.ts";

setDefaultTimeout(20_000);

const NO_VOCABULARY = new ShopVocabulary([]);
const FAKE = join(import.meta.dir, "../../fakes/fake-apertium.ts");
const tempDir = useTempDirs("apertium");
const open: ApertiumTranslator[] = [];

afterEach(async () => {
  for (const translator of open.splice(0)) await translator.close();
});

/**
 * The translator on the fake program, and what its translation pipeline received (its start's
 * probe left out). Its time limits run on fake timers: they run out when a test lets them, never
 * because the machine is slow (a restart of the fake pipelines can take a second on a loaded one).
 */
function fakeTranslator(options: { timeoutMs?: number; maxChars?: number } = {}) {
  const dir = tempDir();
  const timers = new FakeTimers();
  // A segment holding "despacio" is answered once this file exists (fake-apertium.ts).
  const hold = join(dir, "hold");
  const stage = (log: string, args: string) =>
    `FAKE_APERTIUM_LOG='${join(dir, log)}' FAKE_APERTIUM_HOLD='${hold}' '${process.execPath}' '${FAKE}' -z ${args}`;
  const translator = new ApertiumTranslator(
    {
      translate: `${stage("translate.log", "analyse es")} | ${stage("translate.log", "translate")}`,
      analyseSpanish: stage("analysers.log", "analyse es"),
      analyseEnglish: stage("analysers.log", "analyse en"),
    },
    // No vocabulary: these test the pipes; the vocabulary is tested on the real Apertium (below).
    {
      timeoutMs: options.timeoutMs ?? 5000,
      maxChars: options.maxChars,
      retryAfterMs: 0,
      vocabulary: NO_VOCABULARY,
      timers,
    },
  );
  open.push(translator);
  /** A log's lines; none before its first segment. */
  const logged = (log: string) => (existsSync(join(dir, log)) ? readFileSync(join(dir, log), "utf8") : "");
  const translated = () =>
    logged("translate.log")
      .split("\n")
      .filter((line) => line.startsWith("analyse\t") && line !== "analyse\tcasa")
      .map((line) => line.slice("analyse\t".length));
  /** The segments the analysers received (their starts' probes left out). */
  const analysed = () =>
    logged("analysers.log")
      .split("\n")
      .filter((line) => line !== "" && !line.endsWith("\tcasa"))
      .map((line) => line.slice(line.indexOf("\t") + 1));
  /** Lets the segments holding "despacio" be answered. */
  const release = () => writeFileSync(hold, "");
  return { translator, translated, analysed, release, timers };
}

async function rejection(promise: Promise<unknown>): Promise<PipeUnavailable> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PipeUnavailable) return error;
    throw error;
  }
  throw new Error("expected a rejection");
}

describe("ApertiumTranslator on a fake pipeline", () => {
  test("Spanish is translated line by line; English and unknown texts come back as they are, untranslated", async () => {
    const { translator, translated } = fakeTranslator();
    const answers = await translator.toEnglish([
      "Funda de terciopelo\npara el sofá",
      "velvet cover for my sofa",
      "XK-200 15/64",
      "",
    ]);
    expect(answers).toEqual([
      { text: "cover of velvet\nfor the sofa", language: "es", translated: true },
      { text: "velvet cover for my sofa", language: "en", translated: false },
      { text: "XK-200 15/64", language: "unknown", translated: false },
      { text: "", language: "unknown", translated: false },
    ]);
    expect(translated()).toEqual(["Funda de terciopelo.", "para el sofá."]);
  });

  test("reserved characters reach Apertium escaped and come back as they were", async () => {
    const { translator, translated } = fakeTranslator();
    const [answer] = await translator.toEnglish(["precio de la casa [oferta] <b> @casa {z} a/b \\ ^$"]);
    expect(translated()).toEqual(["precio de la casa \\[oferta\\] \\<b\\> \\@casa \\{z\\} a\\/b \\\\ \\^\\$."]);
    expect(answer?.text).toBe("price of the house [offer] <b> @house {z} a/b \\ ^$");
  });

  test("a text with no answer in time rejects; the stuck pipeline is restarted for the next call", async () => {
    const { translator, timers } = fakeTranslator({ timeoutMs: 500 });
    await translator.start();
    const starts = translator.starts;
    const failed = rejection(translator.toEnglish(["la funda cuelga"]));
    await timers.elapse(500);
    expect((await failed).reason).toBe("timeout");
    expect(await translator.toEnglish(["la funda de terciopelo"])).toEqual([
      { text: "the cover of velvet", language: "es", translated: true },
    ]);
    expect(translator.starts).toBeGreaterThan(starts);
  });

  test("a pipeline that crashes mid-query rejects that call; the next call gets a new one", async () => {
    const { translator } = fakeTranslator();
    await translator.start();
    expect((await rejection(translator.toEnglish(["la casa revienta"]))).reason).toBe("died");
    expect(await translator.toEnglish(["la casa de mi perro"])).toEqual([
      { text: "the house of my dog", language: "es", translated: true },
    ]);
  });

  test("a very long text is translated up to maxChars, cut at a space; the rest stays as it was", async () => {
    const { translator, translated } = fakeTranslator({ maxChars: 2000 });
    const long = "funda de terciopelo ".repeat(5000).trim();
    const [answer] = await translator.toEnglish([long]);
    const [sent = ""] = translated();
    expect(sent.length).toBeLessThanOrEqual(2001);
    expect(sent).toEndWith("terciopelo.");
    expect(answer?.translated).toBe(true);
    expect(answer?.text).toStartWith("cover of velvet cover of velvet");
    expect(answer?.text).toEndWith("funda de terciopelo");
    expect(answer?.text.length).toBeGreaterThan(long.length * 0.9);
  });
  test("a word no dictionary knows: the text goes to translation as typed while its typo repair is looked up; a repair found is translated again", async () => {
    const { translator, translated, release } = fakeTranslator();
    // "despecio" is one letter from "despacio", whose lookup the analyser holds until released.
    const answer = translator.toEnglish(["funda despecio"]);
    await waitUntil(() => translated().includes("funda despecio."));
    release();
    const [repaired] = await answer;
    expect(repaired).toMatchObject({
      text: "cover slowly",
      language: "es",
      translated: true,
      typoRepairs: ["despecio"],
    });
    expect(translated()).toEqual(["funda despecio.", "funda despacio."]);
  });

  test("a word no repair reaches is translated once, as typed", async () => {
    const { translator, translated } = fakeTranslator();
    const [answer] = await translator.toEnglish(["funda zzqxw"]);
    expect(answer).toMatchObject({ language: "es", translated: true });
    expect(answer?.typoRepairs).toBeUndefined();
    expect(translated()).toEqual(["funda zzqxw."]);
  });

  test("a word's typo repair, or that it has none, is looked up once: later texts with the word reuse it", async () => {
    const { translator, analysed, release } = fakeTranslator();
    release();
    // The lookups: segments of the words' variants ("despacio" one of despecio's, "zzqxwa" one of zzqxw's).
    const lookups = () => analysed().filter((segment) => segment.includes(" despacio ") || segment.includes("zzqxwa"));
    const first = await translator.toEnglish(["funda despecio", "funda zzqxw"]);
    expect(first.map((answer) => answer.typoRepairs)).toEqual([["despecio"], undefined]);
    expect(lookups()).toHaveLength(2);
    const again = await translator.toEnglish(["casa despecio", "casa zzqxw"]);
    expect(again[0]).toMatchObject({ text: "house slowly", typoRepairs: ["despecio"] });
    expect(again[0]?.unknownWords).toBeUndefined();
    expect(again[1]?.typoRepairs).toBeUndefined();
    expect(again[1]?.unknownWords).toEqual(["zzqxw"]);
    expect(lookups()).toHaveLength(2);
  });
});

describe("findApertium", () => {
  test("says what is missing", () => {
    const dir = tempDir();
    const lookup = findApertium(dir);
    expect(lookup).toEqual({ found: false, reason: expect.stringContaining("spa-eng.mode is missing") });
  });

  test("a mode's stages become programs with null flush, the generator's option set", () => {
    const stages = parseMode("sh -c 'x y' | cat $1 '/a b/c.bin' | true $2", "/nonexistent");
    const path = (program: string) => Bun.which(program) ?? `${program} not on PATH`;
    expect(stages).toEqual([
      [path("sh"), "-z", "-c", "x y"],
      [path("cat"), "-z", "-g", "/a b/c.bin"],
      [path("true"), "-z"],
    ]);
    expect(parseMode("no-such-program-here -x", "/nonexistent")).toBe(
      "the program no-such-program-here is not installed",
    );
  });
});

const apertium = findApertium();
if (!apertium.found) {
  console.warn(
    `tests/adapters/translation/apertium.test.ts: the tests on the real Apertium are SKIPPED: ${apertium.reason} (install it with .ci/apertium.sh)`,
  );
}

// CI installs Apertium (.ci/apertium.sh), so these run there; elsewhere they need `apt-get install apertium-eng-spa`.
describe.skipIf(!apertium.found)("ApertiumTranslator on the real Apertium", () => {
  let translator: ApertiumTranslator;
  blockHooks(!apertium.found, {
    async beforeAll() {
      if (!apertium.found) return; // (narrows the type)
      // Fake timers: a slow machine makes these answers late, never wrong.
      translator = new ApertiumTranslator(apertium.pipelines, { timeoutMs: 5000, timers: new FakeTimers() });
      await translator.start();
    },
    afterAll: () => translator.close(),
  });

  const languageOf = async (text: string) => (await translator.toEnglish([text]))[0]?.language;

  test("English sentences are read as English", async () => {
    for (const text of [
      "a stainless steel water bottle for the gym",
      "wireless earphones with a long battery life",
      "warm socks for my grandfather",
      "Something to keep my tea hot all morning",
    ]) {
      expect(await languageOf(text)).toBe("en");
    }
  });

  test("Spanish sentences are read as Spanish", async () => {
    for (const text of [
      "una mochila resistente para ir a la montaña",
      "zapatillas cómodas para correr por la mañana",
      "Lámpara de pie con luz cálida",
      "calcetines de lana para el invierno",
    ]) {
      expect(await languageOf(text)).toBe("es");
    }
  });

  test("casual Spanish (abbreviations, no accents, a dropped letter) is read as Spanish", async () => {
    for (const text of [
      "algo pa limpiar el movil",
      "regalo xa mi novia q le gusta el te",
      "unas zapatillas pa correr x la mñn",
      "cargadr pa la compu d mi hijo",
    ]) {
      expect(await languageOf(text)).toBe("es");
    }
  });

  test("names and model numbers alone are not taken for either language", async () => {
    expect(await languageOf("Lenovo IdeaPad 3 15ITL6")).toBe("unknown");
  });

  test("translates Spanish, repairing casual typing first", async () => {
    const [velvet, phone, charger] = await translator.toEnglish([
      "funda de terciopelo para el sofá",
      "algo pa limpiar el movil",
      "el cargadr del coche",
    ]);
    expect(velvet?.text).toMatch(/velvet.*sofa/i);
    expect(phone?.text).toMatch(/for cleaning|to clean/i);
    expect(phone?.text).toMatch(/mobile/i);
    expect(charger?.text).not.toContain("cargadr");
  });

  test("a typo repair is reported, and a word the caller keeps is not repaired (a brand in lower case)", async () => {
    // "casio" is one letter from exactly one Spanish word: read alone, it is a misspelt casino.
    const [repaired] = await translator.toEnglish(["reloj casio"]);
    expect(repaired).toMatchObject({ language: "es", translated: true, typoRepairs: ["casio"] });
    expect(repaired?.text.toLowerCase()).toBe("watch casino");
    const [kept] = await translator.toEnglish(["reloj casio"], undefined, { keepWords: ["casio"] });
    expect(kept?.text.toLowerCase()).toBe("watch casio");
    expect(kept?.typoRepairs).toBeUndefined();
    // A query with nothing repaired says so.
    expect((await translator.toEnglish(["reloj de pulsera"]))[0]?.typoRepairs).toBeUndefined();
  });

  test("reserved characters survive a real translation", async () => {
    const [answer] = await translator.toEnglish(["el precio de la casa [oferta] <b>hoy</b> {2} 10/20 ^$ \\"]);
    expect(answer?.translated).toBe(true);
    for (const kept of ["[", "]", "<b>", "</b>", "{2}", "10/20", "^$", "\\"]) expect(answer?.text).toContain(kept);
    expect(answer?.text).toMatch(/price/i);
  });

  const toEnglish = async (text: string) => (await translator.toEnglish([text]))[0];

  /** Each case: Spanish, what its English must say, and what Apertium alone said instead (in the comment, its whole answer). */
  async function expectTranslations(cases: readonly (readonly [string, RegExp, RegExp])[]) {
    for (const [spanish, wanted, before] of cases) {
      const answer = await toEnglish(spanish);
      expect({ spanish, language: answer?.language, english: answer?.text }).toEqual({
        spanish,
        language: "es",
        english: expect.stringMatching(wanted),
      });
      expect({ spanish, english: answer?.text }).not.toEqual({ spanish, english: expect.stringMatching(before) });
    }
  }

  test("shop vocabulary, product nouns: the shop's sense, and nouns Apertium does not know", async () => {
    await expectTranslations([
      ["reloj elegante de mujer", /elegant watch/i, /clock/i], // "Elegant clock of woman"
      ["cargador para el móvil", /charger/i, /carrier/i], // "Carrier for the mobile"
      ["funda de terciopelo para el sofá", /cover of velvet/i, /found/i], // "It founds of velvet for the sofa"
      ["cafetera italiana", /coffee maker/i, /cafetera/i], // not read as Spanish
      ["zapatillas para correr", /sports shoes/i, /zapatillas/i], // "zapatillas To run"
      ["pendientes de oro", /earrings/i, /slopes/i], // "Slopes of gold"
      ["una taza para mi padre", /mug/i, /cup/i], // "A cup for my father" (the catalogue sells mugs)
      ["mochila para el colegio", /backpack/i, /rucksack/i], // "Rucksack for the school"
    ]);
  });

  test("shop vocabulary, regional and colloquial words", async () => {
    await expectTranslations([
      ["un celular nuevo", /mobile phone/i, /cellular/i], // "A cellular new"
      ["playera blanca", /T-shirt/i, /playera/i], // not read as Spanish
      ["foco led para el baño", /bulb/i, /focus/i], // "Focus led for the bath"
      ["bocina bluetooth", /speaker/i, /bocina|horn/i], // not read as Spanish
      ["audifonos inalámbricos", /headphones/i, /audifonos/i], // not even read as Spanish
      ["tenis para correr", /sports shoes/i, /tennis/i], // "Tennis to run"
    ]);
  });

  test("shop vocabulary, phrases: several words meaning one product, and the words around a noun choosing its sense", async () => {
    await expectTranslations([
      ["reloj de pared para la cocina", /wall clock/i, /wall watch|clock of wall/i], // "Clock of wall for the cookery"
      ["sábanas para cama de matrimonio", /double bed/i, /marriage/i], // "Bedsheets for bed of marriage"
      ["gafas de sol para niño", /sunglasses/i, /of sun/i], // "Glasses of sun for boy"
      ["batería para mi portátil", /my laptop/i, /portable/i], // "Battery for my portable"
      ["collar para perro", /dog collar/i, /necklace/i], // "Necklace for dog"
    ]);
    // The same noun alone keeps its shop sense.
    expect((await toEnglish("reloj de oro"))?.text).toMatch(/watch/i);
  });

  test("diminutives are read as the word they come from", async () => {
    await expectTranslations([
      ["un relojito de oro", /watch/i, /relojito/i], // left in Spanish
      ["tacitas de café", /mugs/i, /tacit/i], // "Tacit of coffee"
      ["bolsito de fiesta", /handbag/i, /bolsito/i], // left in Spanish
      ["funditas para celular", /covers/i, /funditas/i], // left in Spanish
    ]);
  });

  test("accentless Spanish is read as Spanish and translated; accentless homographs mean the shop's word", async () => {
    await expectTranslations([
      ["cancion", /song/i, /cancion/i], // not read as Spanish
      ["telefono para mi mama", /telephone for my mamma/i, /breast/i], // "Telephone for my breast"
      ["cafe", /coffee/i, /cafe/i], // read as English
      ["pantalon", /trousers/i, /pantalon/i], // not read as Spanish
      ["ropa de bebe", /baby/i, /drink/i], // "Clothes of drink"
      ["te verde", /green tea/i, /you/i], // "You green"
    ]);
  });

  test("English stays English, even with words Spanish shares or a Spanish word once repaired", async () => {
    for (const text of [
      "cafe racer jacket",
      "a watch for my wife",
      "Puma sports shoes",
      "sheets for a king size bed",
    ]) {
      const answer = await toEnglish(text);
      expect(answer).toMatchObject({ text, language: "en", translated: false });
      expect(answer?.alternatives).toBeUndefined();
    }
  });

  test("every vocabulary entry, alone, comes out as its English", async () => {
    const { SHOP_VOCABULARY } = await import("../../../src/adapters/translation/shop-vocabulary.ts");
    const dir = join(import.meta.dir, "../../../src/adapters/translation/vocabulary");
    const wrong: string[] = [];
    for (const file of ["products.tsv", "regional.tsv", "phrases.tsv"]) {
      for (const line of readFileSync(join(dir, file), "utf8").split("\n")) {
        if (line.trim() === "" || line.startsWith("#")) continue;
        const [spanish = "", english = ""] = line.split("\t");
        expect(SHOP_VOCABULARY.matches(spanish).map((match) => match.replacement)).toEqual([english]);
        const answer = await toEnglish(spanish);
        if (!answer?.text.toLowerCase().includes(english.toLowerCase())) wrong.push(`${spanish} → ${answer?.text}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe.skipIf(!apertium.found)(
  "ApertiumTranslator on the real Apertium: what a search matches besides the translation",
  () => {
    let translator: ApertiumTranslator;
    blockHooks(!apertium.found, {
      async beforeAll() {
        if (!apertium.found) return; // (narrows the type)
        translator = new ApertiumTranslator(apertium.pipelines, { timeoutMs: 5000, timers: new FakeTimers() });
        await translator.start();
      },
      afterAll: () => translator.close(),
    });
    const toEnglish = async (text: string) => (await translator.toEnglish([text]))[0];

    test("a misspelt Spanish word one slip from exactly one word is read as it (a letter replaced, dropped, added or swapped)", async () => {
      for (const [typed, meant] of [
        ["mocasijes sin cordones", /loafers/i], // mocasines
        ["reloj elegakte de mujer", /elegant watch/i], // elegante
        ["aceite para aromatersapia", /aromatherapy/i], // aromaterapia, a letter too many
        ["lámpara para el slaón", /living room/i], // salón, two letters swapped
        ["quctar las manchas", /remove/i], // quitar
      ] as const) {
        const answer = await toEnglish(typed);
        expect({ typed, english: answer?.text }).toEqual({ typed, english: expect.stringMatching(meant) });
      }
    });

    test("a misspelling one slip from several words stays as it is: no guess between them", async () => {
      // "fogo": foto, foco, foro... ; "cenp": cena, ceno...
      expect((await toEnglish("un marco para la fogo de mi bebé"))?.text).toContain("fogo");
      expect((await toEnglish("una cenp con amigas"))?.text).toContain("cenp");
    });

    test("the words no dictionary knows are told (misspellings, most often), in Spanish and English texts alike", async () => {
      expect((await toEnglish("funda de terciopelo para el sofá"))?.unknownWords).toBeUndefined();
      expect((await toEnglish("un marco para la fogo de mi bebé"))?.unknownWords).toEqual(["fogo"]);
      expect((await toEnglish("replacement batxery for my laptop"))?.unknownWords).toEqual(["batxery"]);
      expect((await toEnglish("sdfghj dfg"))?.unknownWords).toEqual(["sdfghj", "dfg"]);
    });

    test("the dictionary's other translations of nouns and adjectives come along; not those of the vocabulary's words", async () => {
      const crystals = await toEnglish("reloj de mujer con cristales");
      expect(crystals?.text).toMatch(/watch/i);
      expect(crystals?.alternatives).toContain("glass");
      // "reloj" is the vocabulary's (watch): Apertium's "clock" is not offered.
      expect(crystals?.alternatives).not.toContain("clock");
      // English is not translated, and has none.
      expect((await toEnglish("a watch with crystals"))?.alternatives).toBeUndefined();
    });
  },
);
