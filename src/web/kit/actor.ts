import type { FastifyRequest } from 'fastify';
import type { User } from '../../accounts/users.ts';
import type { Actor } from '../../merchants/events.ts';

/** A signed-in user acting from a browser, as the activity log records them: who, and from which address and browser. */
export const actorOf = (user: Pick<User, 'id' | 'email'>, request: FastifyRequest): Actor => ({
  kind: 'user',
  id: user.id,
  label: user.email,
  ip: request.ip,
  userAgent: typeof request.headers['user-agent'] === 'string' ? request.headers['user-agent'] : null,
});
