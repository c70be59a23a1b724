import { readTemplate } from '../assets.js';

/**
 * Renders a templates/ file: `{{name}}` placeholders replaced by values. Pure and
 * strict: a placeholder without a value, or a value nobody uses, is a bug.
 */
export function renderTemplate(name: string, values: Record<string, string | number>): string {
  return fillTemplate(readTemplate(name), values, name);
}

export function fillTemplate(text: string, values: Record<string, string | number>, name = 'template'): string {
  const used = new Set<string>();
  const out = text.replace(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g, (_, key: string) => {
    if (!(key in values)) throw new Error(`internal: ${name} needs a value for {{${key}}}`);
    used.add(key);
    return String(values[key]);
  });
  const unused = Object.keys(values).filter((k) => !used.has(k));
  if (unused.length > 0) throw new Error(`internal: ${name} has no placeholder for ${unused.join(', ')}`);
  return out;
}
