// Part of the REST contract fuzzer (helpers/fuzz.ts, which describes it and re-exports what its
// users need): the settings of a run, and the operations, read from the OpenAPI
// document (paths x methods), so a new operation is fuzzed without a line here.
import { randomInt } from 'node:crypto';
import * as fc from 'fast-check';
import { serviceDocument } from './service-document.ts';

//------------------------------------------------------------------------------------------------
// Settings

export interface FuzzSettings {
  /** fast-check's seed: FUZZ_SEED (a number, or `random`), DEFAULT_SEED unless told. */
  seed: number;
  /** Requests in all, shared among the operations: FUZZ_RUNS, DEFAULT_RUNS unless told. */
  runs: number;
  /** FUZZ_PATH: replays one counterexample (with its seed), as a failure prints it. */
  path: string | undefined;
  /** FUZZ_TIMEOUT_MS: a request not answered within this fails (default 10 s). */
  timeoutMs: number;
  /** FUZZ_SHRINK_SECONDS: how long a failure is shrunk before it is reported (default 20). */
  shrinkMs: number;
}

export const DEFAULT_SEED = 20260301;
export const DEFAULT_RUNS = 2000;

export function fuzzSettings(env: NodeJS.ProcessEnv = process.env): FuzzSettings {
  const number = (name: string, fallback: number) => {
    const text = env[name];
    if (text === undefined || text === '') return fallback;
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new Error(`${name} must be a whole number, not ${JSON.stringify(text)}`);
    }
    return value;
  };
  return {
    seed: env.FUZZ_SEED === 'random' ? randomInt(2 ** 31) : number('FUZZ_SEED', DEFAULT_SEED),
    runs: number('FUZZ_RUNS', DEFAULT_RUNS),
    path: env.FUZZ_PATH || undefined,
    timeoutMs: number('FUZZ_TIMEOUT_MS', 10_000),
    shrinkMs: number('FUZZ_SHRINK_SECONDS', 20) * 1000,
  };
}

//------------------------------------------------------------------------------------------------
// The operations, from the OpenAPI document

/** The parts of JSON Schema the document's request schemas use. */
export interface Schema {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  schema: Schema;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Operation {
  method: Method;
  /** The path template, e.g. /welds/{id}/status. */
  template: string;
  /** '' for every operation, '/api' too for the data paths (auth, health, GraphQL: root only). */
  prefixes: string[];
  parameters: Parameter[];
  /** The documented body: its media type and schema (the CSV body has an example). */
  body?: { type: string; schema: Schema; example?: string };
  /** The pool {id} is drawn from: the path's first segment (welds for /welds/{id}/status). */
  pool: string;
}

export const doc = serviceDocument() as unknown as {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, Schema> };
};

export const METHODS: Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
export const UNSAFE = new Set<Method>(['POST', 'PUT', 'PATCH', 'DELETE']);

export const describeOperation = (o: Operation) => `${o.method} ${o.template}`;

/** Every operation of the document, in its order. */
export function operations(): Operation[] {
  return Object.entries(doc.paths).flatMap(([template, item]) =>
    METHODS.filter((m) => item[m.toLowerCase()]).map((method) => {
      const op = item[method.toLowerCase()] as {
        parameters?: Parameter[];
        requestBody?: { content: Record<string, { schema: Schema; example?: string }> };
      };
      const [type, media] = Object.entries(op.requestBody?.content ?? {})[0] ?? [];
      const operation: Operation = {
        method,
        template,
        prefixes: item.servers ? [''] : ['', '/api'],
        parameters: op.parameters ?? [],
        ...(type && media && { body: { type, schema: media.schema, example: media.example } }),
        pool: template.split('/')[1]!,
      };
      // fast-check prints plans: an operation as its method and path, not its schemas.
      Object.defineProperty(operation, fc.toStringMethod, {
        value: () => describeOperation(operation),
      });
      return operation;
    }),
  );
}

/** The operations grouped by the first segment of their path: one test each. */
export function operationGroups(): Array<{ name: string; operations: Operation[] }> {
  const groups = new Map<string, Operation[]>();
  for (const o of operations()) groups.set(`/${o.pool}`, [...(groups.get(`/${o.pool}`) ?? []), o]);
  return [...groups].map(([name, list]) => ({ name, operations: list }));
}

export function resolve(schema: Schema): Schema {
  const name = schema.$ref?.replace('#/components/schemas/', '');
  return name ? resolve(doc.components.schemas[name]!) : schema;
}
