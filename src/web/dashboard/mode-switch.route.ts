import type { FastifyInstance } from 'fastify';
import { modeOfKey } from '../../common/modes.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { rememberViewedMode } from '../kit/mode.ts';
import { MODE_SWITCH_PATH, SECTIONS } from './layout.ts';
import { addDashboardRoute } from './page-route.ts';

/**
 * `POST /dashboard/mode`: the "Test mode" switch. Sets the mode the browser's dashboard shows
 * (`mode` = `test` or `live`, one the deployment serves) and goes back to the section it was used on
 * (`section`): to its list, as an object of one mode is not in the other.
 */
export function registerModeSwitch(app: FastifyInstance, context: AppContext): void {
  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: MODE_SWITCH_PATH,
      permission: 'account',
      summary: 'Switches the dashboard between test and live mode (form post with the session CSRF token)',
      description:
        'Takes `mode` (`test` or `live`, one this deployment serves), `section` (the dashboard section to go back to) and `csrf` as a form. The choice is kept in the browser (the `till_mode` cookie).',
      responses: { 303: { description: 'Switched (or not signed in: on to sign-in): back to the section' } },
    },
    async (_signedIn, request, reply) => {
      const fields = formFields(request);
      const section = SECTIONS.find((s) => s.id === fields.section) ?? SECTIONS[0];
      const mode = fields.mode === 'test' || fields.mode === 'live' ? modeOfKey(fields.mode) : undefined;
      // A mode this deployment does not serve changes nothing: the dashboard keeps showing what it shows.
      if (mode && context.config.modes.includes(mode)) rememberViewedMode(context, reply, mode);
      return reply.redirect(section.path, 303);
    },
  );
}
