// The vocabulary files, imported `with { type: "text" }` (shop-vocabulary.ts): the value is the
// file's text, so `bun build --compile` carries them inside the executable.
declare module "*.tsv" {
  const text: string;
  export default text;
}
