// Passkeys in the browser (the account page's "Add a passkey", the second step of sign-in's "Use a
// passkey"): the form's submit first asks its options URL for the ceremony's options, lets the
// browser make or use the passkey, puts the answer in the form's `response` field and sends the
// form on. Built by npm run build.
import { startAuthentication, startRegistration } from '@simplewebauthn/browser';

for (const form of Array.from(document.querySelectorAll<HTMLFormElement>('form[data-passkey]'))) {
  const status = form.querySelector<HTMLElement>('[data-passkey-status]');
  const answer = form.querySelector<HTMLInputElement>('input[name="response"]');
  form.addEventListener('submit', async (event) => {
    if (answer?.value) return;
    event.preventDefault();
    const say = (text: string) => {
      if (status) status.textContent = text;
    };
    try {
      const asked = await fetch(form.dataset.options ?? '', {
        method: 'POST',
        body: new URLSearchParams(new FormData(form) as unknown as Record<string, string>),
      });
      if (!asked.ok) throw new Error(`the service answered ${asked.status}`);
      const optionsJSON = await asked.json();
      const response = form.dataset.passkey === 'register' ? await startRegistration({ optionsJSON }) : await startAuthentication({ optionsJSON });
      if (answer) answer.value = JSON.stringify(response);
      form.submit();
    } catch (error) {
      say(`No passkey was used: ${error instanceof Error ? error.message : String(error)}`);
    }
  });
}
