// The Team page and invitations, the last owner, and the activity log, as an owner, an invitee and
// an admin see them: invitations mailed with a single-use link, refusals that name the field and
// change nothing, racing demotions that always leave one owner, and every change in the log.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { INVITATION_LIFETIME_MS } from '../../accounts/invitations.ts';
import { changeRole, createUser, LastOwnerError, listMembers } from '../../accounts/users.ts';
import { listMails } from '../../mail/outbox.ts';
import { OPERATOR } from '../../merchants/events.ts';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { Browser, signedInMerchant } from '../../testing/page-browser.ts';

const PASSWORD = 'correct horse battery staple';

for (const { engine, skip } of engines) {
  describeOnEngine(`the team and its activity on ${engine}`, skip, () => {
    let service: TestService;
    let clock = Date.now();
    before(async () => {
      service = await startTestService(engine, {}, { now: () => clock });
    });
    after(() => service?.stop());

    /** The link of the newest invitation mailed to `email`. */
    async function invitationLink(email: string): Promise<string> {
      const mails = await listMails(service.context.db, { limit: 50 });
      const mail = mails.find((m) => m.recipient === email && m.data.kind === 'invitation');
      assert.ok(mail, `an invitation is mailed to ${email}`);
      assert.equal(mail.data.kind, 'invitation');
      return new URL(mail.data.kind === 'invitation' ? mail.data.link : '').pathname + new URL(mail.data.kind === 'invitation' ? mail.data.link : '').search;
    }

    async function invite(browser: Browser, email: string, role: string) {
      return browser.request('POST', '/dashboard/team/invitations', { csrf: await browser.csrf('/dashboard/team'), email, role });
    }

    async function accept(link: string, password = PASSWORD) {
      const invitee = new Browser(service, '203.0.113.9');
      const page = await invitee.request('GET', link);
      if (page.statusCode !== 200) return { invitee, answer: page };
      const token = new URL(link, 'http://till.test').searchParams.get('token')!;
      const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
      const answer = await invitee.request('POST', '/invitations/accept', { csrf, token, password, confirm: password });
      return { invitee, answer };
    }

    test('an owner invites a developer by email; the link makes the user with that role, signed in, once', async () => {
      const owner = await signedInMerchant(service);
      const email = `dev-${engine}-${Date.now()}@shop.example`;
      const sent = await invite(owner.browser, email, 'developer');
      assert.equal(sent.statusCode, 303);
      const team = await owner.browser.request('GET', '/dashboard/team?invited=1');
      assert.match(team.body, /Invitation sent/);
      assert.ok(team.body.includes(email), 'pending invitations list it');
      const link = await invitationLink(email);
      const { invitee, answer } = await accept(link);
      assert.equal(answer.statusCode, 303);
      assert.equal(answer.headers.location, '/dashboard');
      const members = await listMembers(service.context.db, owner.merchantId);
      assert.equal(members.find((m) => m.email === email)?.role, 'developer');
      // Signed in with its role: keys yes, the team no.
      assert.equal((await invitee.request('GET', '/dashboard/get-paid')).statusCode, 200);
      assert.equal((await invitee.request('GET', '/dashboard/team')).statusCode, 403);
      // The same link again: refused, nothing made.
      const again = await accept(link);
      assert.equal(again.answer.statusCode, 404);
      assert.match(again.answer.body, /already accepted/);
      assert.equal((await listMembers(service.context.db, owner.merchantId)).length, 2);
      // The log has the invitation, its acceptance (from the invitee's address) and nothing from the refusal.
      const csv = (await owner.browser.request('GET', '/dashboard/activity.csv')).body;
      assert.match(csv, /invitation_sent,both,/);
      assert.match(csv, new RegExp(`${email.replace(/[.]/g, '\\.')},user,invitation_accepted,both,.*203\\.0\\.113\\.9`));
      assert.equal(csv.split('invitation_accepted').length - 1, 1);
    });

    test('a revoked or expired invitation, one to a member, and an unknown role are refused naming the field, changing nothing', async () => {
      const owner = await signedInMerchant(service);
      const revokedEmail = `revoked-${engine}-${Date.now()}@shop.example`;
      await invite(owner.browser, revokedEmail, 'viewer');
      const revokedLink = await invitationLink(revokedEmail);
      const team = (await owner.browser.request('GET', '/dashboard/team')).body;
      const revokePath = /action="(\/dashboard\/team\/invitations\/inv_[^"]+\/revoke)"/.exec(team)![1]!;
      assert.equal((await owner.browser.request('POST', revokePath, { csrf: await owner.browser.csrf('/dashboard/team') })).statusCode, 303);
      const revoked = await accept(revokedLink);
      assert.equal(revoked.answer.statusCode, 404);
      assert.match(revoked.answer.body, /revoked/);

      const lateEmail = `late-${engine}-${Date.now()}@shop.example`;
      await invite(owner.browser, lateEmail, 'viewer');
      const lateLink = await invitationLink(lateEmail);
      clock += INVITATION_LIFETIME_MS + 1;
      try {
        const late = await accept(lateLink);
        assert.equal(late.answer.statusCode, 404);
        assert.match(late.answer.body, /expired/);
      } finally {
        clock = Date.now();
      }

      const member = await invite(owner.browser, owner.email, 'viewer');
      assert.equal(member.statusCode, 400);
      assert.match(member.body, /Email is already a member of this team\./);
      const unknownRole = await invite(owner.browser, `someone-${Date.now()}@shop.example`, 'superuser');
      assert.equal(unknownRole.statusCode, 400);
      assert.match(unknownRole.body, /Role must be one of Owner, Admin, Developer or Viewer\./);
      const badEmail = await invite(owner.browser, 'not-an-address', 'viewer');
      assert.equal(badEmail.statusCode, 400);
      assert.match(badEmail.body, /Email is not an email address/);
      // Nobody joined.
      assert.deepEqual(
        (await listMembers(service.context.db, owner.merchantId)).map((m) => m.email),
        [owner.email],
      );
      const badCsv = await owner.browser.request('GET', '/dashboard/activity?from=yesterday');
      assert.equal(badCsv.statusCode, 400);
      assert.match(badCsv.body, /From must be a date/);
    });

    test('an admin cannot make, demote or remove an owner; the last owner cannot leave or be demoted', async () => {
      const owner = await signedInMerchant(service);
      const adminEmail = `admin-${engine}-${Date.now()}@shop.example`;
      const admin = await createUser(service.context.db, { merchantId: owner.merchantId, email: adminEmail, password: PASSWORD, role: 'admin' });
      const adminBrowser = new Browser(service);
      await adminBrowser.signIn(adminEmail, PASSWORD);
      const csrf = await adminBrowser.csrf('/dashboard/team');
      const ownerInvite = await adminBrowser.request('POST', '/dashboard/team/invitations', { csrf, email: `o-${Date.now()}@shop.example`, role: 'owner' });
      assert.equal(ownerInvite.statusCode, 400);
      assert.match(ownerInvite.body, /Role Owner can be given by an owner only\./);
      const demote = await adminBrowser.request('POST', `/dashboard/team/members/${owner.userId}/role`, { csrf, role: 'viewer' });
      assert.equal(demote.statusCode, 400);
      const remove = await adminBrowser.request('POST', `/dashboard/team/members/${owner.userId}/remove`, { csrf });
      assert.equal(remove.statusCode, 400);

      // The owner alone: neither demoted nor removed, by themself.
      const ownerCsrf = await owner.browser.csrf('/dashboard/team');
      const self = await owner.browser.request('POST', `/dashboard/team/members/${owner.userId}/role`, { csrf: ownerCsrf, role: 'admin' });
      assert.equal(self.statusCode, 400);
      assert.match(self.body, /last owner/);
      const leave = await owner.browser.request('POST', `/dashboard/team/members/${owner.userId}/remove`, { csrf: ownerCsrf });
      assert.equal(leave.statusCode, 400);
      assert.match(leave.body, /last owner/);
      // The owner removes the admin: signed out at once.
      assert.equal((await owner.browser.request('POST', `/dashboard/team/members/${admin.id}/remove`, { csrf: ownerCsrf })).statusCode, 303);
      assert.equal((await adminBrowser.request('GET', '/dashboard')).statusCode, 303);
      const roles = (await listMembers(service.context.db, owner.merchantId)).map((m) => `${m.email}:${m.role}`);
      assert.deepEqual(roles, [`${owner.email}:owner`]);
      const log = (await owner.browser.request('GET', '/dashboard/activity?what=member_removed')).body;
      assert.ok(log.includes('Member removed') && log.includes(adminEmail));
    });

    test('two owners demoting each other at once leave exactly one owner, every time', async () => {
      const { merchantId } = await service.merchant();
      const a = await createUser(service.context.db, { merchantId, email: `a-${engine}-${Date.now()}@shop.example`, password: PASSWORD });
      const b = await createUser(service.context.db, { merchantId, email: `b-${engine}-${Date.now()}@shop.example`, password: PASSWORD });
      for (let round = 0; round < 10; round++) {
        const results = await Promise.allSettled([
          changeRole(service.context.db, { merchantId, userId: a.id, role: 'developer', actor: OPERATOR }),
          changeRole(service.context.db, { merchantId, userId: b.id, role: 'viewer', actor: OPERATOR }),
        ]);
        const refused = results.filter((r) => r.status === 'rejected');
        assert.equal(refused.length, 1, `round ${round}: one of the two is refused`);
        assert.ok((refused[0] as PromiseRejectedResult).reason instanceof LastOwnerError);
        const owners = (await listMembers(service.context.db, merchantId)).filter((m) => m.role === 'owner');
        assert.equal(owners.length, 1, `round ${round}: one owner left`);
        // Both owners again for the next round.
        for (const user of [a, b]) await changeRole(service.context.db, { merchantId, userId: user.id, role: 'owner', actor: OPERATOR });
      }
    });
  });
}
