import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { registerCreateSession } from './create-session.route.ts';
import { registerGetSession } from './get-session.route.ts';
import { registerListSessions } from './list-sessions.route.ts';
import { registerUpdateSession } from './update-session.route.ts';

export function registerSessionRoutes(app: FastifyInstance, context: AppContext): void {
  registerCreateSession(app, context);
  registerUpdateSession(app, context);
  registerGetSession(app, context);
  registerListSessions(app, context);
}
