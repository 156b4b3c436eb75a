// Checks responses against the service's own OpenAPI document: the operation is found by method
// and path template (data paths also under /api), the response by status (or `default`), and the
// JSON body is validated with Ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1).
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { serviceDocument } from './service-document.ts';
import type { HttpResponse } from './http.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const doc = serviceDocument() as unknown as {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>
  >;
};
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, 'openapi');

const pointer = (...parts: string[]) =>
  parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');
// Literal segments win over parameters, as the service's routes do (/isos/weld-counts is not
// /isos/{id}): templates with fewer parameters are tried first.
const templates = Object.keys(doc.paths)
  .map((template) => ({
    template,
    pattern: new RegExp('^' + template.replace(/\{[^}]+\}/g, '[^/]+').replaceAll('.', '\\.') + '$'),
    parameters: template.split('{').length,
  }))
  .sort((a, b) => a.parameters - b.parameters);

/**
 * Throws, naming what is wrong, when a response of a documented operation is not one the contract
 * describes. Requests to undocumented paths or methods (tests probing 404 and 405, test-only
 * routes) are not checked here; their own assertions cover them.
 */
export function assertMatchesContract(method: string, url: string, res: HttpResponse): void {
  const path = url.split('?')[0]!;
  const found =
    templates.find((t) => t.pattern.test(path)) ??
    templates.find((t) => path.startsWith('/api/') && t.pattern.test(path.slice(4)));
  const operation = found && doc.paths[found.template]![method.toLowerCase()];
  if (!found || !operation) return;
  const status = operation.responses[String(res.status)] ? String(res.status) : 'default';
  const response = operation.responses[status];
  if (!response)
    throw new Error(`${method} ${found.template}: status ${res.status} is not documented`);
  if (!response.content) return; // 204, 304: no body
  const type = String(res.headers['content-type'] ?? '').split(';')[0]!;
  if (!response.content[type]) {
    throw new Error(
      `${method} ${found.template} ${res.status}: content type ${type} is not documented`,
    );
  }
  if (!type.endsWith('json')) return; // a CSV export: its own assertions read it
  const ref = `openapi#/${pointer('paths', found.template, method.toLowerCase(), 'responses', status, 'content', type, 'schema')}`;
  const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
  if (!validate(res.json)) {
    throw new Error(
      `${method} ${path} ${res.status} breaks the contract: ${ajv.errorsText(validate.errors)}`,
    );
  }
}
