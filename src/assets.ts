import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Files from templates/. Inside the single executable they are SEA assets embedded
 * at build time (sea-config.json); when run from source (tests, `node build/...`)
 * they are read from the repository's templates/ folder.
 */
const sea = process.getBuiltinModule?.('node:sea') as typeof import('node:sea') | undefined;
const cache = new Map<string, string>();

export function isSingleExecutable(): boolean {
  return sea?.isSea() ?? false;
}

export function readTemplate(name: string): string {
  const hit = cache.get(name);
  if (hit !== undefined) return hit;
  let text: string;
  if (isSingleExecutable()) {
    try {
      text = sea!.getAsset(`templates/${name}`, 'utf8');
    } catch {
      throw new Error(`internal: template ${name} is not embedded in this binary`);
    }
  } else {
    text = fs.readFileSync(path.join(templatesDir(), name), 'utf8');
  }
  cache.set(name, text);
  return text;
}

function templatesDir(): string {
  // src/assets.ts and build/service-deploy.cjs both sit one level below the repository.
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'templates');
}
