// Imported `with { type: "file" }` (docs-assets.ts): the value is the file's path, not its code.
declare module "swagger-ui-dist/swagger-ui-bundle.js" {
  const path: string;
  export default path;
}

declare module "swagger-ui-dist/swagger-ui.css" {
  const path: string;
  export default path;
}
