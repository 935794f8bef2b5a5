/** Where a buyer asks for a settled payment's receipt by email: the form (`?order=TX-…`), and the hosted page script's JSON request. */
export const RECEIPT_MAIL_PATH = '/mail/receipt';
export const RECEIPT_MAIL_JSON_PATH = '/mail/receipt.json';
