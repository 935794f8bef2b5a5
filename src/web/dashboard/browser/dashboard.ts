// The dashboard's one script, served from our origin: selects a secret shown once, and reveals the
// Copy buttons (pages work without it: the field is then selected by hand). Built by npm run build.
import { startRefundForm } from './refund.ts';

for (const field of Array.from(document.querySelectorAll<HTMLInputElement>('input[data-select]'))) {
  field.focus();
  field.select();
}

for (const button of Array.from(document.querySelectorAll<HTMLButtonElement>('button[data-copy]'))) {
  const field = document.getElementById(button.dataset.copy ?? '') as HTMLInputElement | null;
  const label = button.textContent;
  if (!field) continue;
  button.hidden = false;
  button.addEventListener('click', async () => {
    field.select();
    try {
      await navigator.clipboard.writeText(field.value);
      button.textContent = 'Copied';
    } catch {
      button.textContent = 'Press Ctrl+C to copy';
    }
    setTimeout(() => {
      button.textContent = label;
    }, 2000);
  });
}

for (const form of Array.from(document.querySelectorAll<HTMLFormElement>('form[data-refund-prepare]'))) startRefundForm(form);
