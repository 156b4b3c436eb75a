// Every route the service serves, in one list: the process's health, authentication, the data
// paths (marked `data`: server/app.ts mounts them once at / and once at /api, with identical
// behaviour), GraphQL, the API documents and the inspectors' web app (/app/).
// server/main.ts (and the tests' in-process server) hand this list to createApp.
import type pg from 'pg';
import { attachmentRoutes, type AttachmentOptions } from '../rest-adapter/attachments.ts';
import { authRoutes } from '../rest-adapter/auth.ts';
import { codeRuleRoutes } from '../rest-adapter/code-rules.ts';
import { dossierRoutes } from '../rest-adapter/dossier.ts';
import { eventRoutes, type EventOptions } from '../rest-adapter/events.ts';
import { historyRoutes } from '../rest-adapter/history.ts';
import { importRoutes, type ImportOptions } from '../rest-adapter/imports.ts';
import { isoProgressRoutes } from '../rest-adapter/isos.ts';
import { oauthRoutes } from '../rest-adapter/oauth.ts';
import { indexRoute, openapiRoutes } from '../rest-adapter/openapi.ts';
import { resourceRoutes } from '../rest-adapter/resource.ts';
import { reportRoutes } from '../rest-adapter/reports.ts';
import { RESOURCES } from '../rest-adapter/resources.ts';
import { webhookRoutes, type WebhookOptions } from '../rest-adapter/webhooks.ts';
import { weldLifecycleRoutes } from '../rest-adapter/welds.ts';
import type { KeyRing } from '../rest-adapter/http/auth/keys.ts';
import { graphqlRoutes, type Graphql } from './graphql.ts';
import { healthRoutes } from './health.ts';
import type { Route } from '../rest-adapter/http/route.ts';
import { appRoutes } from './pwa.ts';

export interface ServiceDeps {
  pool: pg.Pool;
  /** The health probes' pool (see AppDeps.controlPool); default: pool. */
  controlPool?: pg.Pool;
  ring: KeyRing;
  graphql: Graphql;
  auth: { accessTokenTtl: number; refreshTokenTtl: number };
  /** The change feed and its streams: the wake-ups, and the per-user stream limit. */
  events: EventOptions;
  webhooks: WebhookOptions;
  /** The weld register import (IMPORT_MAX_BYTES). */
  imports: ImportOptions;
  /** Where attachments live, and the largest file (ATTACHMENT_MAX_BYTES). */
  attachments: AttachmentOptions;
  /** True once shutdown has begun: readiness fails so load balancers stop sending work. */
  isDraining?: () => boolean;
}

export function serviceRoutes(deps: ServiceDeps): Route[] {
  const operations: Route[] = [
    indexRoute(),
    ...healthRoutes({
      pool: deps.controlPool ?? deps.pool,
      isDraining: deps.isDraining ?? (() => false),
    }),
    ...authRoutes({ pool: deps.pool, ring: deps.ring, ...deps.auth }),
    ...oauthRoutes({ pool: deps.pool, ring: deps.ring, accessTokenTtl: deps.auth.accessTokenTtl }),
    ...[
      ...weldLifecycleRoutes(deps.pool),
      ...historyRoutes(deps.pool),
      ...codeRuleRoutes(deps.pool),
      ...eventRoutes(deps.pool, { isDraining: deps.isDraining, ...deps.events }),
      ...webhookRoutes(deps.pool, deps.webhooks),
      ...importRoutes(deps.pool, deps.imports),
      ...attachmentRoutes(deps.pool, deps.attachments),
      ...dossierRoutes(deps.pool, deps.attachments.store),
      ...isoProgressRoutes(deps.pool),
      ...reportRoutes(deps.pool),
      ...RESOURCES.flatMap((resource) => resourceRoutes(resource, deps.pool)),
    ].map((route): Route => ({ ...route, data: true })),
    ...graphqlRoutes(deps.graphql),
  ];
  return [...operations, ...openapiRoutes(operations), ...appRoutes()];
}
