// What an operation says about itself in the OpenAPI document, and the parts every operation
// description is made of. A route carries its description (Route.doc) beside its handler;
// rest-adapter/openapi.ts gathers them into the document, so an endpoint is written in one place.
//
// Shapes come from the zod schemas the handlers validate with (json()), so the document and the
// validation cannot say different things.
import { z } from 'zod';

/** A component schema, by name: `components.schemas[name]`. */
export type Schemas = Record<string, unknown>;

/** One operation, as OpenAPI 3.1 states it, plus the component schemas it names. */
export interface OperationDoc {
  summary: string;
  description?: string;
  /** Default: the path's first segment (one tag per resource, so /docs is navigable). */
  tags?: string[];
  parameters?: unknown[];
  requestBody?: unknown;
  responses: Record<string, unknown>;
  /** [] for an operation that needs no access token. */
  security?: unknown[];
  /** The component schemas this operation introduces (a name may be shared if equal). */
  schemas?: Schemas;
}

/** A zod schema as JSON Schema 2020-12 (`input`: what a client sends, with defaults optional). */
export const json = (schema: z.ZodType, io: 'input' | 'output' = 'output') =>
  z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const content = (name: string, type = 'application/json') => ({
  content: { [type]: { schema: ref(name) } },
});

/** A problem response; several schema names hold together (each is conditional on `type`). */
export const problem = (description: string, name: string | string[] = 'Problem') => ({
  description,
  content: {
    'application/problem+json': {
      schema: typeof name === 'string' ? ref(name) : { allOf: name.map(ref) },
    },
  },
});

/** Query parameters from a strict zod object: one entry per key, with the key's input schema. */
export function queryParameters(schema: z.ZodObject) {
  return Object.entries(schema.shape).map(([name, field]) => {
    const { $schema: _dialect, ...fieldSchema } = json(field as z.ZodType, 'input');
    return {
      name,
      in: 'query',
      required: false,
      schema: fieldSchema,
      description: fieldSchema.description,
    };
  });
}

/** The answers every tenant operation may give. */
export const common = {
  '401': problem(
    'No access token, or an invalid one: `WWW-Authenticate: Bearer` with `error="invalid_token"` and an `error_description` that says "The access token expired" (refresh it) or that it is invalid (sign in again)',
  ),
  '404': problem('Unknown tenant (origin), or no such resource'),
  default: problem('Any other error, as RFC 9457 problem details'),
};
/** The 422 of a read whose query parameters are wrong. */
export const badParameter = problem('a bad parameter, named in errors');
/** A page of a list. */
export const page = {
  description: 'One page; `Link: <...>; rel="next"` when there is a next one',
  headers: { Link: { schema: { type: 'string' }, description: 'the next page, rel="next"' } },
};
export const idParam = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string', format: 'uuid' },
};
export const header = (name: string, description: string) => ({
  name,
  in: 'header',
  required: false,
  schema: { type: 'string' },
  description,
});
export const itemHeaders = {
  ETag: { schema: { type: 'string' }, description: 'the version, quoted' },
};
export const idempotencyKey = header(
  'Idempotency-Key',
  '1 to 255 visible ASCII characters; the same key and body within 24 h replay the first answer, another body is 422',
);
export const replayedHeader = {
  'Idempotent-Replayed': {
    schema: { const: 'true' },
    description: 'present when this is the stored answer of an earlier request',
  },
};
