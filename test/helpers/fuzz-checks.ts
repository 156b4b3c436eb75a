// Part of the REST contract fuzzer (helpers/fuzz.ts, which describes it and re-exports what its
// users need): the invariants every answer is checked against, the known issues,
// and the words that describe an exchange.
import { assertMatchesContract } from './openapi.ts';
import type { Operation } from './fuzz-operations.ts';
import type { SentRequest, FuzzResponse } from './fuzz-requests.ts';

//------------------------------------------------------------------------------------------------
// The invariants

/** GraphQL over HTTP: POST /graphql answers what GraphQL refuses in GraphQL's media types. */
export const GRAPHQL_TYPES = ['application/graphql-response+json', 'application/json'];

/** What is wrong with an answer (invariants 1 to 3); empty when nothing is. */
export function violations(o: Operation, req: SentRequest, res: FuzzResponse): string[] {
  const found: string[] = [];
  if (res.status >= 500) found.push(`${res.status}: no 5xx may be answered here`);
  const type = String(res.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim();
  const body = res.json as Record<string, unknown> | undefined;
  if (res.status >= 400) {
    if (o.template === '/graphql' && GRAPHQL_TYPES.includes(type)) {
      if (!Array.isArray(body?.errors)) found.push('a GraphQL error answer without `errors`');
    } else if (o.template.startsWith('/oauth/') && type === 'application/json') {
      // The OAuth2 endpoints answer RFC 6749 section 5.2's JSON (with the problem members too).
      if (typeof body?.error !== 'string') found.push('an OAuth2 error answer without `error`');
      if (body?.status !== res.status)
        found.push(`an OAuth2 error whose status is not ${res.status}`);
    } else if (type !== 'application/problem+json') {
      found.push(`a ${res.status} as ${type || 'no content type'}, not application/problem+json`);
    } else {
      for (const member of ['type', 'title', 'detail']) {
        if (typeof body?.[member] !== 'string' || !body[member]) {
          found.push(`a problem without ${member}`);
        }
      }
      if (body?.status !== res.status) {
        found.push(`a problem whose status ${String(body?.status)} is not ${res.status}`);
      }
    }
  }
  try {
    assertMatchesContract(req.method, req.path, res);
  } catch (error) {
    found.push((error as Error).message);
  }
  return found;
}

/**
 * Failures found and reported whose fix is outside test/ and rest-adapter/: each is known by its
 * request and answer, and counted (the report names it) rather than failing the run. Remove the
 * entry with the fix, and the run proves it.
 */
export const KNOWN_ISSUES: Array<{
  name: string;
  matches(req: SentRequest, res: FuzzResponse): boolean;
}> = [
  {
    // Grafserv fails on an Accept header it cannot parse (x, application/json;q=x) with a 500;
    // server/graphql.ts should answer 406 before handing the request to it.
    name: 'POST /graphql with a malformed Accept header is a 500 (Grafserv)',
    matches: (req, res) =>
      res.status === 500 &&
      req.path.split('?')[0] === '/graphql' &&
      req.headers.accept !== undefined,
  },
];

export const excerpt = (value: string, length = 600) =>
  JSON.stringify(
    value.length > length ? `${value.slice(0, length)}... (${value.length} chars)` : value,
  );

/** The request and the answer, in full enough to replay with curl. */
export function describeExchange(req: SentRequest, res?: FuzzResponse): string {
  const headers = Object.entries(req.headers).map(([name, value]) => {
    const v = Array.isArray(value) ? value.join(' | ') : value;
    return `  ${name}: ${excerpt(v, name === 'authorization' || name === 'cookie' ? 120 : 300)}`;
  });
  const body =
    req.body === undefined
      ? '  (no body)'
      : `  body (${req.body.length} bytes${req.chunked ? ', chunked' : ''}): ${excerpt(req.body.toString('latin1'))}`;
  const answer = res
    ? `response: ${res.status} ${String(res.headers['content-type'] ?? '(no content type)')}\n  ${excerpt(res.text, 1500)}`
    : 'response: none';
  return [
    `request: ${req.method} ${excerpt(req.path, 1000)}`,
    `  as ${req.identity}`,
    ...headers,
    body,
    answer,
  ].join('\n');
}
