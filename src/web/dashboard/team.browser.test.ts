// A team in Debian's Chromium: the owner invites a viewer on the Team page, the invitation is read
// on the sandbox's mail page, the invitee follows its link, chooses a password and is signed in, sets
// up an authenticator app; signs in again with that password and a code of the app, in the viewer's
// role: no wallet form, and the wallet form's post
// refused with the 403 page. The owner reads it all on the Activity page. axe-core on every page;
// the Team and Activity pages on a phone and a desktop under artifacts/dashboard/.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { totpCode, totpStep } from '../../accounts/totp.ts';
import { createUser } from '../../accounts/users.ts';
import { listMails } from '../../mail/outbox.ts';
import { type MailWorker, startMailWorker } from '../../mail/worker.ts';
import { assertAccessible, browserSkip, launchChromium, screenshots, typeInto } from '../../testing/browser.ts';
import { engines, startListeningTestService, type TestService } from '../../testing/harness.ts';
import { waitFor } from '../../testing/wait.ts';
import { renderMail } from '../mail/templates.ts';

const OWNER = 'owner@corner-coffee.example';
const INVITEE = 'ana@corner-coffee.example';
const PASSWORD = 'correct horse battery staple';
const INVITEE_PASSWORD = 'a passphrase of her own';

for (const { engine, skip } of engines) {
  describe(`a team in Chromium on ${engine}`, { skip: skip || browserSkip }, () => {
    let service: TestService & { baseUrl: string };
    let browser: Browser;
    let worker: MailWorker;
    // The service's clock runs with the real one, moved on by the test so a sign-in code is of a new step.
    let ahead = 0;
    const now = () => Date.now() + ahead;

    before(async () => {
      [service, browser] = await Promise.all([startListeningTestService(engine, {}, { now }), launchChromium()]);
      const { merchantId } = await service.merchant({ name: 'Corner Coffee' });
      await createUser(service.context.db, { merchantId, email: OWNER, password: PASSWORD });
      await createUser(service.context.db, { merchantId, email: 'dev@corner-coffee.example', password: PASSWORD, role: 'developer' });
      const { context } = service;
      // No SMTP server: the worker keeps each mail for the sandbox's mail page.
      worker = startMailWorker(context, {
        render: (mail) => renderMail({ db: context.db, baseUrl: context.config.baseUrl, secretKey: context.config.secretKey }, mail),
        pollIntervalMs: 20,
      });
    });
    after(async () => {
      await worker?.stop();
      await browser?.close();
      await service?.stop();
    });

    async function signIn(page: Page, email: string, password: string, path: string) {
      await page.goto(`${service.baseUrl}${path}`);
      await typeInto(page, 'Email', email);
      await typeInto(page, 'Password', password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${service.baseUrl}${path}`);
    }

    test('invite → mail → accept with a password → an authenticator app → signed in with its code as a viewer, who has no wallet form and is refused its post', async () => {
      const ownerContext = await browser.newContext({ viewport: { width: 1280, height: 900 }, userAgent: 'Till test browser (owner)' });
      const inviteeContext = await browser.newContext({ viewport: { width: 1280, height: 900 }, userAgent: 'Till test browser (invitee)' });
      try {
        const owner = await ownerContext.newPage();
        await signIn(owner, OWNER, PASSWORD, '/dashboard/team');
        await typeInto(owner, 'Email', INVITEE);
        await owner.getByLabel('Role', { exact: true }).selectOption('viewer');
        await owner.getByRole('button', { name: 'Send invitation' }).click();
        await owner.waitForURL(`${service.baseUrl}/dashboard/team?invited=1`);
        await owner.getByText('Invitation sent.').waitFor();
        const pending = owner.locator('table.invitations');
        assert.match((await pending.textContent()) ?? '', /ana@corner-coffee\.example\s*Viewer/);
        await assertAccessible(owner);
        await screenshots(owner, 'dashboard', `team-${engine}`);

        // The mail, on the sandbox's mail page.
        await waitFor(
          async () => (await listMails(service.context.db, { status: 'KEPT', limit: 20 })).some((m) => m.recipient === INVITEE),
          'the invitation is kept',
        );
        const invitee = await inviteeContext.newPage();
        await invitee.goto(`${service.baseUrl}/sandbox/mail`);
        await invitee.getByRole('link', { name: /Join Corner Coffee on Till/ }).click();
        const text = (await invitee.locator('pre').textContent()) ?? '';
        assert.match(text, /owner@corner-coffee\.example invites you to the Till dashboard of Corner Coffee, as Viewer\./);
        const link = /(http:\/\/\S+\/invitations\/accept\?token=[\w-]{43})/.exec(text)?.[1];
        assert.ok(link, 'the mail carries the link');

        await invitee.goto(link);
        await invitee.getByRole('heading', { name: 'Join Corner Coffee' }).waitFor();
        await assertAccessible(invitee);
        await typeInto(invitee, 'Password', INVITEE_PASSWORD);
        await typeInto(invitee, 'Password again', INVITEE_PASSWORD);
        await invitee.getByRole('button', { name: 'Join and sign in' }).click();
        await invitee.waitForURL(`${service.baseUrl}/dashboard`);
        // The new member sets up an authenticator app, as any user may whatever the role.
        await invitee.goto(`${service.baseUrl}/dashboard/account/two-factor`);
        await invitee.getByRole('button', { name: 'Set up an authenticator app' }).click();
        const secret = ((await invitee.locator('#totp-secret').textContent()) ?? '').replaceAll(' ', '');
        await typeInto(invitee, 'Code from the app', totpCode(secret, totpStep(now())));
        await invitee.getByRole('button', { name: 'Turn on' }).click();
        await invitee.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
        // Signed out, then in again with the password chosen and a code of the next step: the viewer's dashboard.
        await invitee.getByRole('button', { name: 'Sign out' }).click();
        await invitee.waitForURL(/\/sign-in/);
        ahead += 30_000;
        await invitee.goto(`${service.baseUrl}/dashboard/settings`);
        await typeInto(invitee, 'Email', INVITEE);
        await typeInto(invitee, 'Password', INVITEE_PASSWORD);
        await invitee.getByRole('button', { name: 'Sign in' }).click();
        await invitee.waitForURL(/\/sign-in\/second-factor/);
        await typeInto(invitee, 'Code', totpCode(secret, totpStep(now())));
        await invitee.getByRole('button', { name: 'Sign in' }).click();
        await invitee.waitForURL(`${service.baseUrl}/dashboard/settings`);
        const nav = invitee.getByRole('navigation', { name: 'Dashboard' });
        assert.equal(await nav.getByRole('link', { name: 'Team' }).count(), 0, 'no Team for a viewer');
        assert.equal(await invitee.getByRole('button', { name: /payout wallet/ }).count(), 0, 'no wallet form for a viewer');
        await invitee.getByText('Your role, Viewer, cannot change the payout wallet.').waitFor();
        // The form posted anyway, as a page of ours would: the 403 page names what the role lacks.
        await invitee.evaluate(() => {
          const csrf = (document.querySelector('input[name="csrf"]') as HTMLInputElement).value;
          const form = document.createElement('form');
          form.method = 'post';
          form.action = '/dashboard/settings/wallet';
          for (const [name, value] of [
            ['csrf', csrf],
            ['wallet', '0x8ba1f109551bD432803012645Ac136ddd64DBA72'],
            ['confirm', 'BA72'],
            ['password', 'a passphrase of her own'],
          ]) {
            const input = document.createElement('input');
            input.type = 'hidden';
            input.name = name!;
            input.value = value!;
            form.append(input);
          }
          document.body.append(form);
          form.submit();
        });
        await invitee.waitForURL(`${service.baseUrl}/dashboard/settings/wallet`);
        await invitee.getByRole('heading', { name: 'Your role does not allow this' }).waitFor();
        assert.match((await invitee.locator('main').textContent()) ?? '', /Your role, Viewer, cannot change the payout wallet \(the wallet permission\)\./);
        await assertAccessible(invitee);
        const merchant = await service.context.db
          .selectFrom('merchants')
          .select(['wallet_address', 'test_wallet_address'])
          .where('name', '=', 'Corner Coffee')
          .executeTakeFirstOrThrow();
        assert.ok(!Object.values(merchant).includes('0x8ba1f109551bD432803012645Ac136ddd64DBA72'), 'the wallet is unchanged');

        // The owner reads it all in the activity log, and narrows it to sign-ins.
        await owner.goto(`${service.baseUrl}/dashboard/activity`);
        const log = (await owner.getByRole('table').textContent()) ?? '';
        for (const line of ['Invitation sent', 'Invitation accepted', 'Signed in from a new browser', 'Till test browser (invitee)'])
          assert.ok(log.includes(line), `the log shows ${line}`);
        await assertAccessible(owner);
        await screenshots(owner, 'dashboard', `activity-${engine}`);
        await owner.getByLabel('What').selectOption('invitation_accepted');
        await owner.getByRole('button', { name: 'Filter' }).click();
        await owner.waitForURL(/what=invitation_accepted/);
        assert.equal(await owner.getByRole('table').locator('tbody tr').count(), 1);
      } finally {
        await ownerContext.close();
        await inviteeContext.close();
      }
    });
  });
}
