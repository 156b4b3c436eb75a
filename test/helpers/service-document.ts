// The service's OpenAPI document as it serves it: built from the routes server/routes.ts lists.
// Building the route list touches no database; the dependencies here are never called.
import type pg from 'pg';
import type { AttachmentStore } from '../../db/attachment-store.ts';
import type { EventNotifications } from '../../db/event-notifications.ts';
import type { KeyRing } from '../../rest-adapter/http/auth/keys.ts';
import type { Route } from '../../rest-adapter/http/route.ts';
import { openapiDocument } from '../../rest-adapter/openapi.ts';
import type { Graphql } from '../../server/graphql.ts';
import { serviceRoutes } from '../../server/routes.ts';
import { TEST_WEBHOOK_SECRET_KEYS } from './server.ts';

/** Every route of the service, built with inert dependencies. */
export function inertServiceRoutes(): Route[] {
  return serviceRoutes({
    pool: {} as pg.Pool,
    ring: {} as KeyRing,
    graphql: {} as Graphql,
    auth: { accessTokenTtl: 600, refreshTokenTtl: 86_400 },
    events: { notifications: {} as EventNotifications, streamsPerUser: 5 },
    webhooks: { allowPrivate: false, timeoutMs: 1000, secretKeys: TEST_WEBHOOK_SECRET_KEYS },
    imports: { maxBytes: 1024 },
    attachments: { store: {} as AttachmentStore, maxBytes: 1024 },
  });
}

/** The document /openapi.json serves. */
export const serviceDocument = () => openapiDocument(inertServiceRoutes());
