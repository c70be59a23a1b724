/**
 * zod's tree-shakable API (zod/mini), with English messages, for the schemas that every
 * install, doctor and guard start runs (answers, profile, components, manifest, apt
 * packages): the bundle keeps only the parts they use, about 30 KB, where the classic
 * API's every schema method pulls in all of it (90 KB, twice the start-up work). The
 * classic API stays where its extras are the point: the --json documents (json/, their
 * descriptions and published JSON Schemas), loaded only for --json, and the partner API.
 * Import it as a namespace: `import * as z from '../zod.js'`.
 */
import { config } from 'zod/mini';
// Imported by its own path: through the `locales` namespace every locale would be bundled.
import en from 'zod/v4/locales/en.js';

// zod/mini says only "Invalid input" unless given a locale (the classic API sets this one itself).
config(en());

export * from 'zod/mini';
