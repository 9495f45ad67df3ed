/**
 * Spanish → English with Apertium (GPL-2), run as separate programs: this process only talks to
 * them over pipes. Three long-lived pipelines: the spa-eng translation, and the Spanish and English
 * analysers that tell a text's language and check repairs of casual Spanish.
 *
 * Apertium's own `apertium -z` wrapper buffers and hangs as a pipe, so the pipelines are the mode's
 * programs (from `share/apertium/modes/spa-eng.mode`), each run with `-z` (flush at every NUL) under
 * `stdbuf -o0` (lt-proc's bilingual and generation stages do not flush on NUL otherwise).
 */
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { LruCache } from "../../lib/lru-cache.ts";
import { systemTimers, type Timers } from "../../ports/timers.ts";
import type { Language, Translation, TranslationOptions, Translator } from "../../ports/translator.ts";
import { NulPipe } from "./nul-pipe.ts";
import {
  ACCENT_FIXES,
  isPlaceholderEnglish,
  normaliseWord,
  preEdit,
  SHOP_VOCABULARY,
  type ShopVocabulary,
} from "./shop-vocabulary.ts";
import {
  type AnalysedUnit,
  accentVariants,
  decideLanguage,
  diminutiveBases,
  escapeForApertium,
  expandAbbreviations,
  knowledgeOfWords,
  omissionVariants,
  readAnalysis,
  readBilingualAlternatives,
  readTranslation,
  replaceWords,
  typoVariants,
  unknownWords,
} from "./spanish-text.ts";

/** The shell command lines of the pipelines. */
export interface ApertiumPipelines {
  /** Spanish text in, English text out. */
  translate: string;
  /** Spanish morphological analysis (`^word/analysis$`, `^word/*word$` when unknown). */
  analyseSpanish: string;
  /** English morphological analysis. */
  analyseEnglish: string;
  /**
   * `translate` cut after its bilingual dictionary (`lt-proc -b`): `front` gives every translation
   * the dictionary has for each word, `^reloj<n><m><sg>/clock<n><sg>/watch<n><sg>$`, and `back`
   * (lexical selection to generation) takes that and writes the English. When given, texts go
   * through both instead of `translate`, and the front's output gives the other translations (no
   * process more than one translation pipeline). Absent: no alternatives.
   */
  split?: { front: string; back: string };
}

export type ApertiumLookup =
  | { found: true; pipelines: ApertiumPipelines; prefix: string }
  | { found: false; reason: string };

const PAIR_MODES = { translate: "spa-eng", english: "eng-spa" } as const;

/**
 * Finds Apertium and its spa-eng data: under `prefix` (its bin/ and share/apertium/modes/) when
 * given, else the installation whose `apertium` or `lt-proc` is on PATH. Says what is missing otherwise.
 */
export function findApertium(prefix?: string): ApertiumLookup {
  const root = prefix ?? installPrefix();
  if (root === undefined) return { found: false, reason: "apertium is not installed (no lt-proc on PATH)" };
  const stdbuf = Bun.which("stdbuf");
  if (stdbuf === null) return { found: false, reason: "stdbuf (coreutils) is not on PATH" };
  const modes = join(root, "share", "apertium", "modes");
  const stages: Record<keyof typeof PAIR_MODES, string[][]> = { translate: [], english: [] };
  for (const [key, mode] of Object.entries(PAIR_MODES) as [keyof typeof PAIR_MODES, string][]) {
    const file = join(modes, `${mode}.mode`);
    if (!existsSync(file)) {
      return { found: false, reason: `${file} is missing (install apertium-eng-spa)` };
    }
    const parsed = parseMode(readFileSync(file, "utf8"), join(root, "bin"));
    if (typeof parsed === "string") return { found: false, reason: `${file}: ${parsed}` };
    stages[key] = parsed;
  }
  // The analyser (the first stage) flushes at NUL by itself; later stages may not (lt-proc in
  // bilingual and generation modes does not): those run unbuffered, which costs speed (an
  // unbuffered analyser is 15× slower), so only where needed.
  const line = (argvs: readonly string[][]) =>
    argvs.map((argv, i) => (i === 0 ? argv : [stdbuf, "-o0", ...argv]).map(shellQuote).join(" ")).join(" | ");
  // Cut after the bilingual dictionary (analyser, tagger, pretransfer, `lt-proc -b`), when the mode has it.
  const bilingual = stages.translate.findIndex((argv) => /lt-proc$/u.test(argv[0] ?? "") && argv.includes("-b"));
  const cut = bilingual > 0 && bilingual < stages.translate.length - 1 ? bilingual + 1 : 0;
  return {
    found: true,
    prefix: root,
    pipelines: {
      translate: line(stages.translate),
      analyseSpanish: line(stages.translate.slice(0, 1)),
      analyseEnglish: line(stages.english.slice(0, 1)),
      ...(cut > 0
        ? { split: { front: line(stages.translate.slice(0, cut)), back: line(stages.translate.slice(cut)) } }
        : {}),
    },
  };
}

/** The prefix of the Apertium on PATH (/usr for /usr/bin/lt-proc). */
function installPrefix(): string | undefined {
  const program = Bun.which("lt-proc") ?? Bun.which("apertium");
  return program === null ? undefined : dirname(dirname(realpathSync(program)));
}

/**
 * The programs of a `.mode` file, one argv per stage, each resolved to a path (in `bin` first,
 * then on PATH) and given `-z`; `$1` (the generator's option) becomes `-g`, `$2` (the tagger's) nothing.
 * Returns a message when a program cannot be found.
 */
export function parseMode(mode: string, bin: string): string[][] | string {
  const argvs: string[][] = [];
  for (const stage of mode.trim().split("|")) {
    const words = shellWords(stage).flatMap((word) => (word === "$1" ? ["-g"] : word === "$2" ? [] : [word]));
    const [program, ...args] = words;
    if (program === undefined) return "an empty stage";
    const path = Bun.which(program, { PATH: bin }) ?? Bun.which(program);
    if (path === null) return `the program ${program} is not installed`;
    argvs.push([path, "-z", ...args]);
  }
  return argvs.length === 0 ? "no stages" : argvs;
}

/** Words of a stage as the shell would split them (single and double quotes; modes use nothing else). */
function shellWords(stage: string): string[] {
  return [...stage.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3] ?? "");
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

export interface ApertiumTranslatorOptions {
  /** Time limit of one text (detection, repairs and translation together), in milliseconds. */
  timeoutMs: number;
  /** Time a pipeline may take to start (default 10 s); a call does not wait longer than its own limit for it. */
  startTimeoutMs?: number;
  /** After a failed start, calls fail at once for this long (default 5 s). */
  retryAfterMs?: number;
  /**
   * Characters translated per text (default 2,000): the rest, cut at a space, is left as it is.
   * The offline model reads only its first 128 tokens, about 600 characters of English.
   */
  maxChars?: number;
  /** The shop's Spanish → English words and phrases put in before Apertium translates (default: vocabulary/*.tsv). */
  vocabulary?: ShopVocabulary;
  /** The clock and the time limits (default: the real ones). */
  timers?: Timers;
}

/** Repairs tried per text: words the analyser does not know are few in a query, many in a catalogue text. */
const MAX_REPAIRS = 4;
/** Shortest word a one-letter typo repair is tried on (shorter words have too many neighbours). */
const MIN_TYPO_LENGTH = 4;
const MAX_WORD_LENGTH = 24;
/** Words whose typo repair (or its absence) is remembered: a few hundred kB at most. */
const REMEMBERED_TYPO_WORDS = 10_000;
/** A word remembered as having no typo repair. */
const NO_REPAIR = "";

/**
 * Translator on Apertium's spa-eng pair. Each text is analysed by the Spanish and the English
 * analysers, its chat abbreviations written out and its unknown words repaired (an accent left out,
 * when the Spanish analyser knows exactly one such form; a diminutive undone), and then its language
 * decided. A text read as Spanish gets its words that need a letter put back repaired, its
 * accentless homographs fixed ("mama" → "mamá"), the shop vocabulary's phrases put in through
 * placeholders (shop-vocabulary.ts), and is translated line by line. Calls go one at a time per
 * pipeline; each text must be done within `timeoutMs` or the call rejects (and a pipeline stuck on
 * it is restarted).
 */
export class ApertiumTranslator implements Translator {
  readonly name = "apertium spa-eng";
  /** The translation as one pipeline, when it is not split in two (halves). */
  private readonly translate: NulPipe | undefined;
  private readonly spanish: NulPipe;
  private readonly english: NulPipe;
  /** The translation in two halves, cut after its bilingual dictionary (ApertiumPipelines.split); or whole. */
  private readonly halves: { front: NulPipe; back: NulPipe } | undefined;
  private readonly maxChars: number;
  private readonly vocabulary: ShopVocabulary;
  private readonly timers: Timers;
  /** Each word a typo repair was tried on: its repair, or NO_REPAIR. */
  private readonly typoRepairs = new LruCache<string, string>(REMEMBERED_TYPO_WORDS);

  constructor(
    pipelines: ApertiumPipelines,
    private readonly options: ApertiumTranslatorOptions,
  ) {
    this.timers = options.timers ?? systemTimers;
    const pipe = (command: string) =>
      new NulPipe({
        command: ["sh", "-c", command],
        probe: "casa",
        startTimeoutMs: options.startTimeoutMs ?? 10_000,
        retryAfterMs: options.retryAfterMs ?? 5_000,
        timers: this.timers,
      });
    this.halves = pipelines.split && { front: pipe(pipelines.split.front), back: pipe(pipelines.split.back) };
    this.translate = this.halves ? undefined : pipe(pipelines.translate);
    this.spanish = pipe(pipelines.analyseSpanish);
    this.english = pipe(pipelines.analyseEnglish);
    this.maxChars = options.maxChars ?? 2_000;
    this.vocabulary = options.vocabulary ?? SHOP_VOCABULARY;
  }

  /** Starts the pipelines; rejects with the reason when one cannot start or answer. */
  async start(): Promise<void> {
    await Promise.all(this.pipes.map((pipe) => pipe.start()));
  }

  /** Times a pipeline was (re)started, for tests and logs. */
  get starts(): number {
    return this.pipes.reduce((sum, pipe) => sum + pipe.starts, 0);
  }

  private get pipes(): NulPipe[] {
    const translation = this.halves ? [this.halves.front, this.halves.back] : this.translate ? [this.translate] : [];
    return [...translation, this.spanish, this.english];
  }

  async toEnglish(
    texts: readonly string[],
    signal?: AbortSignal,
    options?: TranslationOptions,
  ): Promise<Translation[]> {
    const keep = new Set(options?.keepWords ?? []);
    const translations: Translation[] = [];
    for (const text of texts) translations.push(await this.one(text, keep, signal));
    return translations;
  }

  async close(): Promise<void> {
    await Promise.all(this.pipes.map((pipe) => pipe.close()));
  }

  private async one(text: string, keep: ReadonlySet<string>, signal?: AbortSignal): Promise<Translation> {
    const deadline = this.timers.now() + this.options.timeoutMs;
    const left = () => deadline - this.timers.now();
    const [head, tail] = cut(text, this.maxChars);
    const expanded = expandAbbreviations(head);
    const flat = escapeForApertium(expanded.replace(/\s+/gu, " ").trim());
    if (!/\p{L}/u.test(flat)) return { text, language: "unknown", translated: false };

    const [spanishOut, englishOut] = await Promise.all([
      this.spanish.request([flat], left(), signal),
      this.english.request([flat], left(), signal),
    ]);
    const spanish = readAnalysis(spanishOut[0] ?? "");
    const english = readAnalysis(englishOut[0] ?? "");
    // Accents and diminutives are repaired before the language is decided: "cancion" and
    // "relojito" are Spanish words once repaired, and say that the text is Spanish.
    const repairs = await this.repairForms(spanish, left, signal);
    const language: Language = decideLanguage(
      knowledgeOfWords(spanish, english, (word) => repairs.has(word) || this.vocabulary.has(word)),
    );
    /** Its words no dictionary knows once repaired: the ones a search may take for misspellings. */
    const unknown = () => {
      // Of the text's own words (an abbreviation written out is no word of the shopper's).
      const typed = new Set(head.toLowerCase().match(/\p{L}+/gu) ?? []);
      const words = unknownWords(spanish, english, (word) => repairs.has(word) || this.vocabulary.has(word)).filter(
        (word) => typed.has(word),
      );
      return words.length > 0 ? { unknownWords: words } : {};
    };
    if (language !== "es") return { text, language, translated: false, ...unknown() };

    const words = this.typoWords(spanish, english, repairs, keep);
    /** The words' repairs remembered from earlier texts, and the words not tried before. */
    const remembered = new Map<string, string>();
    const toLookUp: string[] = [];
    for (const word of words) {
      const form = this.typoRepairs.get(word);
      if (form === undefined) toLookUp.push(word);
      else if (form !== NO_REPAIR) remembered.set(word, form);
    }
    // The lookup of new words' repairs and the translation as typed go at once (separate
    // pipelines): most such words are names, or slips no single word is one letter from, and then
    // the translation as typed is the answer; a repair found is translated again.
    const asTyped = this.translateRepaired(expanded, new Map([...repairs, ...remembered]), left, signal);
    asTyped.catch(() => {}); // awaited below, unless a repair found replaces it
    const found = await this.repairTypos(toLookUp, left, signal);
    const typos = new Map([...remembered, ...found]);
    for (const [word, form] of typos) repairs.set(word, form); // a repaired word is no unknown word
    const { translation, alternatives } =
      found.size === 0 ? await asTyped : await this.translateRepaired(expanded, repairs, left, signal);
    return {
      text: tail === "" ? translation : `${translation} ${tail}`,
      language,
      translated: true,
      ...(alternatives.length > 0 ? { alternatives } : {}),
      ...unknown(),
      ...(typos.size > 0 ? { typoRepairs: [...typos.keys()] } : {}),
    };
  }

  /**
   * The English of `expanded` with `repairs` made: its accentless homographs fixed, the shop
   * vocabulary's phrases put in, translated line by line; and the dictionary's other translations
   * of its words.
   */
  private async translateRepaired(
    expanded: string,
    repairs: ReadonlyMap<string, string>,
    left: () => number,
    signal: AbortSignal | undefined,
  ): Promise<{ translation: string; alternatives: string[] }> {
    const repaired = ACCENT_FIXES.replace(replaceWords(expanded, repairs));
    const edited = preEdit(repaired, this.vocabulary);
    const lines = edited.text.split("\n");
    const wanted = lines.map((line, i) => ({ line, i })).filter(({ line }) => /\p{L}/u.test(line));
    const segments = wanted.map(({ line }) => `${escapeForApertium(line.replace(/\s+/gu, " ").trim())}.`);
    const { answers, dictionary } = await this.translateSegments(segments, left, signal);
    wanted.forEach(({ i }, n) => {
      lines[i] = readTranslation(answers[n] ?? "").replace(/\s*\.$/u, "");
    });
    const translation = edited.restore(lines.join("\n"));
    return { translation, alternatives: otherTranslations(dictionary, translation) };
  }

  /**
   * The English of each segment, and (when the translation is split) its bilingual dictionary's
   * output: every translation of each of its words.
   */
  private async translateSegments(
    segments: readonly string[],
    left: () => number,
    signal: AbortSignal | undefined,
  ): Promise<{ answers: string[]; dictionary: string[] }> {
    if (!this.halves) {
      const whole = this.translate as NulPipe;
      return { answers: await whole.request(segments, left(), signal), dictionary: [] };
    }
    const dictionary = await this.halves.front.request(segments, left(), signal);
    return { answers: await this.halves.back.request(dictionary, left(), signal), dictionary };
  }

  /**
   * Repairs of the Spanish analyser's unknown lower-case words that the shop vocabulary does not
   * know: a form that only lacks an accent, when exactly one such form is a word; else, for a
   * diminutive, the first word it may come from that the analyser or the vocabulary knows. And any
   * diminutive of a vocabulary word, known to the analyser or not.
   */
  private async repairForms(
    spanish: readonly AnalysedUnit[],
    left: () => number,
    signal?: AbortSignal,
  ): Promise<Map<string, string>> {
    const unknown = [
      ...new Set(
        spanish
          .filter(
            (unit) =>
              !unit.known &&
              /^\p{Ll}+$/u.test(unit.surface) &&
              unit.surface.length <= MAX_WORD_LENGTH &&
              !this.vocabulary.has(unit.surface),
          )
          .map((unit) => unit.surface),
      ),
    ].slice(0, MAX_REPAIRS);
    const repairs = new Map<string, string>();
    // A diminutive of a vocabulary word is that word, even when the analyser knows it as another
    // ("tacita" is read as tácita, tacit): a shop means the cup.
    for (const unit of spanish) {
      if (!/^\p{Ll}+$/u.test(unit.surface) || this.vocabulary.has(unit.surface)) continue;
      const base = diminutiveBases(unit.surface).find((form) => this.vocabulary.has(form));
      if (base !== undefined) repairs.set(unit.surface, base);
    }
    if (unknown.length === 0) return repairs;
    const diminutives = new Map(unknown.map((word) => [word, diminutiveBases(word)]));
    const [accents, bases] =
      (await this.knownForms(
        [new Map(unknown.map((word) => [word, accentVariants(word)])), diminutives],
        left,
        signal,
      )) ?? [];
    for (const word of unknown) {
      if (repairs.has(word)) continue;
      const accented = accents?.get(word) ?? [];
      if (accented.length === 1) {
        repairs.set(word, accented[0] as string);
        continue;
      }
      const known = new Set(bases?.get(word));
      const base = diminutives.get(word)?.find((form) => known.has(form) || this.vocabulary.has(form));
      if (base !== undefined) repairs.set(word, base);
    }
    return repairs;
  }

  /**
   * The words a typo repair is tried on: of 4 or more letters, that neither analyser nor the shop
   * vocabulary knows and no repair found; not those in `keep` (names the catalogue holds).
   */
  private typoWords(
    spanish: readonly AnalysedUnit[],
    english: readonly AnalysedUnit[],
    repairs: ReadonlyMap<string, string>,
    keep: ReadonlySet<string>,
  ): string[] {
    const englishWords = new Set(english.filter((unit) => unit.known).map((unit) => unit.surface.toLowerCase()));
    return [
      ...new Set(
        spanish
          .filter(
            (unit) =>
              !unit.known &&
              /^\p{Ll}+$/u.test(unit.surface) &&
              unit.surface.length >= MIN_TYPO_LENGTH &&
              unit.surface.length <= MAX_WORD_LENGTH &&
              !repairs.has(unit.surface) &&
              !englishWords.has(unit.surface) &&
              !this.vocabulary.has(unit.surface) &&
              !keep.has(unit.surface),
          )
          .map((unit) => unit.surface),
      ),
    ].slice(0, MAX_REPAIRS);
  }

  /**
   * Of `words` (typoWords), the word one slip away, when exactly one such word is known to the
   * Spanish analyser or the vocabulary (accents aside): first with a letter put back ("cargadr" →
   * "cargador"), and only when no such word exists, with a letter replaced, dropped or two swapped
   * (typoVariants: "mocasijes" → "mocasines", "elegakte" → "elegante"). Several ("cenp": cena,
   * ceno...; "fogo": foto, foco...) and the word stays as it is. Each word's outcome, repair or
   * none, is remembered (typoRepairs): a word is looked up once.
   */
  private async repairTypos(
    words: readonly string[],
    left: () => number,
    signal?: AbortSignal,
  ): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    if (words.length === 0) return found;
    // Two tiers, asked at once: a letter put back (the commonest slip), then the other slips.
    const omissions = new Map(words.map((word) => [word, omissionVariants(word)]));
    const others = new Map(
      words.map((word) => {
        const put = new Set(omissions.get(word));
        return [word, typoVariants(word).filter((variant) => !put.has(variant))];
      }),
    );
    const known = await this.knownForms([omissions, others], left, signal);
    for (const word of words) {
      for (const [tier, candidates] of [omissions, others].entries()) {
        const forms = new Map<string, string>();
        const inVocabulary = (candidates.get(word) ?? []).filter((variant) => this.vocabulary.has(variant));
        for (const form of [...(known?.[tier]?.get(word) ?? []), ...inVocabulary]) {
          if (!forms.has(normaliseWord(form))) forms.set(normaliseWord(form), form);
        }
        if (forms.size === 0) continue;
        if (forms.size === 1) found.set(word, [...forms.values()][0] as string);
        break;
      }
      // An answer the analyser muddled (known undefined) is not remembered: another query may get a clear one.
      if (known !== undefined) this.typoRepairs.set(word, found.get(word) ?? NO_REPAIR);
    }
    return found;
  }

  /**
   * For each map of candidates, each word's candidates (single words) that the Spanish analyser
   * knows; all asked in one segment. Undefined when the analyser joined some candidates into a
   * multiword: then none of its answers can be matched to a candidate.
   */
  private async knownForms(
    candidateMaps: readonly ReadonlyMap<string, readonly string[]>[],
    left: () => number,
    signal?: AbortSignal,
  ): Promise<Map<string, string[]>[] | undefined> {
    const all = candidateMaps.flatMap((candidates) => [...candidates.values()].flat());
    const known = candidateMaps.map(
      (candidates) => new Map([...candidates.keys()].map((word): [string, string[]] => [word, []])),
    );
    if (all.length === 0) return known;
    const [answer = ""] = await this.spanish.request([all.join(" , ")], left(), signal);
    const units = readAnalysis(answer).filter((unit) => unit.surface !== ",");
    if (units.length !== all.length) return undefined;
    let i = 0;
    candidateMaps.forEach((candidates, m) => {
      for (const [word, forms] of candidates) {
        for (const form of forms) if ((units[i++] as AnalysedUnit).known) known[m]?.get(word)?.push(form);
      }
    });
    return known;
  }
}

/**
 * The dictionary's translations of a text's words (its bilingual stage's output, one answer per
 * line) that its translation did not use, leaving out the placeholders' (a vocabulary phrase's
 * English is the vocabulary's, not the placeholder noun's).
 */
function otherTranslations(dictionary: readonly string[], translation: string): string[] {
  // Compared without a plural ending: "sleeve" is no other word than the translation's "sleeves".
  const singular = (word: string) => word.replace(/(?:es|s)$/u, "");
  const used = new Set((translation.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).map(singular));
  const others = new Set<string>();
  for (const answer of dictionary) {
    for (const lemma of readBilingualAlternatives(answer)) {
      if (isPlaceholderEnglish(lemma)) continue;
      if (lemma.split(/\s+/u).every((word) => used.has(singular(word)))) continue;
      others.add(lemma);
    }
  }
  return [...others];
}

/** The text up to `max` characters, cut at a space when there is one, and the rest. */
function cut(text: string, max: number): [string, string] {
  if (text.length <= max) return [text, ""];
  const space = text.lastIndexOf(" ", max);
  const at = space > max / 2 ? space : max;
  return [text.slice(0, at), text.slice(at).trim()];
}
