// Who a data request runs as in the database: the caller's role and tenant, from the access token.
import type { Request } from 'express';
import type { RequestRole, SessionContext } from '../db/database.ts';

export function callerContext(req: Request): SessionContext {
  const identity = req.identity!;
  return {
    role: `weld_${identity.role}` as RequestRole,
    tenantId: req.tenant!.id,
    userId: identity.userId,
    sessionId: identity.sessionId,
  };
}
