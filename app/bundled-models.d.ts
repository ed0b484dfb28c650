/** The models shipped under public/models/, listed at build time by tools/bundled_models.ts. */
declare module 'virtual:bundled-models' {
  const models: import('../tools/bundled_models').BundledModel[];
  export default models;
}
