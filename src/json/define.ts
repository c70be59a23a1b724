import * as z from 'zod';

/**
 * The one pattern every `--json` output follows (docs/json.md): a zod schema per output,
 * from which both the printed document (parsed through it: only its keys, in its order)
 * and the published JSON Schema (`schemas/<name>.schema.json`, scripts/json-schemas.mjs)
 * come. Every document starts with `schemaVersion` and `ok`; `error` is there exactly
 * when `ok` is false.
 */

/** `error` of every failed document, and the whole of the error envelope. */
let errorBodySchema: ReturnType<typeof buildErrorBody> | undefined;
function buildErrorBody() {
  return z.object({
    code: z
      .string()
      .regex(/^[a-z][a-z0-9-]*$/)
      .describe('Stable kind of failure (usage, refused, busy, failed, internal, ...: docs/json.md); branch on this, not on the message'),
    message: z.string().describe('What happened, for people; secrets masked'),
    hint: z.string().nullable().describe('What to do next, or null'),
    exitCode: z.number().int().min(0).max(255).describe('The exit code the command ends with'),
  });
}
export function errorBody() {
  errorBodySchema ??= buildErrorBody();
  return errorBodySchema;
}
export type ErrorBody = z.infer<ReturnType<typeof errorBody>>;

/** One `--json` document: its name (the schema file's), version and shape. */
export interface JsonOutput<S extends z.ZodRawShape = z.ZodRawShape> {
  readonly name: string;
  readonly version: number;
  readonly title: string;
  /** Which command prints it, for the docs and the schema's description. */
  readonly printedBy: string;
  /** Built on first use: a command builds only the schema of the document it prints. */
  readonly schema: z.ZodObject<
    { schemaVersion: z.ZodLiteral<number>; ok: z.ZodBoolean } & S & { error: z.ZodOptional<ReturnType<typeof errorBody>> }
  >;
}

/**
 * Declares an output. `version` starts at 1 and is raised only when a key changes meaning
 * or disappears; adding a key (at the end of an object) keeps it. `shape` is a function,
 * called once when the output is first printed (zod schemas cost time to build, and a
 * start-up that prints one document should not build twenty).
 */
export function defineOutput<S extends z.ZodRawShape>(spec: {
  name: string;
  version: number;
  title: string;
  printedBy: string;
  shape: () => S;
}): JsonOutput<S> {
  let schema: JsonOutput<S>['schema'] | undefined;
  return {
    name: spec.name,
    version: spec.version,
    title: spec.title,
    printedBy: spec.printedBy,
    get schema() {
      schema ??= z.object({
        schemaVersion: z.literal(spec.version).describe("Version of this document's shape; raised only when a key changes meaning or disappears"),
        ok: z.boolean().describe('The command did what was asked (exit code 0); when false, `error` says why'),
        ...spec.shape(),
        error: errorBody().optional().describe('Present exactly when ok is false'),
      }) as unknown as JsonOutput<S>['schema'];
      return schema;
    },
  };
}

/** What a producer passes: the document without `schemaVersion` (the output adds it). */
export type JsonInput<O extends JsonOutput> = Omit<z.input<O['schema']>, 'schemaVersion'>;

/** The published JSON Schema of one output (draft 2020-12), with "error exactly when ok is false". */
export function jsonSchemaOf(output: JsonOutput): Record<string, unknown> {
  // io 'input': objects stay open (no additionalProperties: false), so a document of a later
  // release with an added key still validates against this schema; the printed document
  // itself never carries a key the schema does not name (it is parsed through it).
  const generated = z.toJSONSchema(output.schema, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
  const { $schema, ...rest } = withoutSafeIntegerBounds(generated) as Record<string, unknown>;
  return {
    $schema,
    $id: `https://service-deploy.invalid/schemas/${output.name}.schema.json`,
    title: output.title,
    description: `${output.printedBy}. Version ${output.version}; docs/json.md.`,
    ...rest,
    if: { properties: { ok: { const: false } } },
    then: { required: ['error'] },
    else: { not: { required: ['error'] } },
  };
}

/** zod writes `.int()` as Number.MIN/MAX_SAFE_INTEGER bounds: noise in a published schema. */
function withoutSafeIntegerBounds(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutSafeIntegerBounds);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if ((key === 'minimum' && value === Number.MIN_SAFE_INTEGER) || (key === 'maximum' && value === Number.MAX_SAFE_INTEGER)) continue;
    out[key] = withoutSafeIntegerBounds(value);
  }
  return out;
}
