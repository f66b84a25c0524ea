#!/usr/bin/env python3
"""Checks hookgate against each provider's current official SDK.

For every scheme with an official SDK on npm or PyPI, two directions:

1. verify: `hookgate sign --config … --source …` prints a delivery; the SDK's
   own verify function must accept it (with the SDK's clock, so the signed time
   is now).
2. sign: where the SDK has a signer, it signs a delivery; the delivery is
   POSTed to a running hookgate (the real binary, built with cargo) in front of
   a small recording upstream on 127.0.0.1, and must be forwarded there.

The SDKs are installed fresh, at their current release, into a scratch
folder this script creates (a venv for PyPI packages, a node folder for npm
packages); nothing is installed globally. The versions installed are compared
with the "SDK checked" column of docs/providers.md (rendered from
src/scheme/catalog.rs); a difference is reported so the row can be updated.

Stdlib only. Not part of the default test run: it needs the network to reach
the registries. Usage:

    python3 docs/sdkcheck.py               # everything
    python3 docs/sdkcheck.py stripe box    # some schemes
    python3 docs/sdkcheck.py --work DIR    # reuse a scratch folder (skips installs already there)

Exit status 0 when every check passed.
"""

import argparse
import base64
import http.server
import json
import pathlib
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Packages per ecosystem. A pin is used only where the registry's `latest`
# tag names something else: npm `increase@1.0.0` is an unrelated package, the
# official SDK's releases are the 0.x line.
NPM = {
    "stripe": "stripe",
    "@octokit/webhooks-methods": "@octokit/webhooks-methods",
    "@shopify/shopify-api": "@shopify/shopify-api",
    "standardwebhooks": "standardwebhooks",
    "@sendgrid/eventwebhook": "@sendgrid/eventwebhook",
    "discord-interactions": "discord-interactions",
    "@metronome/sdk": "@metronome/sdk",
    "increase": "increase@0",
    "messagebird": "messagebird",
    "@adyen/api-library": "@adyen/api-library",
    "@sinch/sdk-client": "@sinch/sdk-client",
    "@paddle/paddle-node-sdk": "@paddle/paddle-node-sdk",
    "@mux/mux-node": "@mux/mux-node",
    "@hubspot/api-client": "@hubspot/api-client",
    "square": "square",
    "box-typescript-sdk-gen": "box-typescript-sdk-gen",
    "coinbase-commerce-node": "coinbase-commerce-node",
    "razorpay": "razorpay",
    "gocardless-nodejs": "gocardless-nodejs",
    "@sanity/webhook": "@sanity/webhook",
    "orb-billing": "orb-billing",
    "lithic": "lithic",
    "modern-treasury": "modern-treasury",
    "@tryfinch/finch-api": "@tryfinch/finch-api",
    "@onfido/api": "@onfido/api",
    "@line/bot-sdk": "@line/bot-sdk",
    "openai": "openai",
    "replicate": "replicate",
    "@workos-inc/node": "@workos-inc/node",
    "@easypost/api": "@easypost/api",
    "connect-sdk-nodejs": "connect-sdk-nodejs",
    "viber-bot": "viber-bot",
    "svix": "svix",
    "resend": "resend",
    "webflow-api": "webflow-api",
    "pusher": "pusher",
    "@linear/sdk": "@linear/sdk",
    "@elevenlabs/elevenlabs-js": "@elevenlabs/elevenlabs-js",
    "stream-chat": "stream-chat",
    "@liveblocks/node": "@liveblocks/node",
    "@polar-sh/sdk": "@polar-sh/sdk",
    "dodopayments": "dodopayments",
}
PYPI = {
    "slack_sdk": "slack_sdk",
    "twilio": "twilio",
    "plivo": "plivo",
}

# scheme -> (ecosystem, package). The SDK that the row's "SDK checked" cell
# names; the adapters below call it.
SDKS = {
    "stripe": ("npm", "stripe"),
    "github": ("npm", "@octokit/webhooks-methods"),
    "github-enterprise": ("npm", "@octokit/webhooks-methods"),
    "shopify": ("npm", "@shopify/shopify-api"),
    "slack": ("PyPI", "slack_sdk"),
    "standard": ("npm", "standardwebhooks"),
    "twilio": ("PyPI", "twilio"),
    "sendgrid": ("npm", "@sendgrid/eventwebhook"),
    "discord": ("npm", "discord-interactions"),
    "metronome": ("npm", "@metronome/sdk"),
    "increase": ("npm", "increase"),
    "messagebird": ("npm", "messagebird"),
    "adyen": ("npm", "@adyen/api-library"),
    "adyen-platform": ("npm", "@adyen/api-library"),
    "plivo": ("PyPI", "plivo"),
    "sinch-voice": ("npm", "@sinch/sdk-client"),
    "sinch": ("npm", "@sinch/sdk-client"),
    "sinch-numbers": ("npm", "@sinch/sdk-client"),
    "paddle": ("npm", "@paddle/paddle-node-sdk"),
    "mux": ("npm", "@mux/mux-node"),
    "hubspot": ("npm", "@hubspot/api-client"),
    "square": ("npm", "square"),
    "box": ("npm", "box-typescript-sdk-gen"),
    "coinbase-commerce": ("npm", "coinbase-commerce-node"),
    "razorpay": ("npm", "razorpay"),
    "gocardless": ("npm", "gocardless-nodejs"),
    "sanity": ("npm", "@sanity/webhook"),
    "orb": ("npm", "orb-billing"),
    "lithic": ("npm", "lithic"),
    "modern-treasury": ("npm", "modern-treasury"),
    "finch": ("npm", "@tryfinch/finch-api"),
    "onfido": ("npm", "@onfido/api"),
    "line": ("npm", "@line/bot-sdk"),
    "openai": ("npm", "openai"),
    "replicate": ("npm", "replicate"),
    "workos": ("npm", "@workos-inc/node"),
    "easypost": ("npm", "@easypost/api"),
    "worldline": ("npm", "connect-sdk-nodejs"),
    "viber": ("npm", "viber-bot"),
    "svix": ("npm", "svix"),
    "clerk": ("npm", "svix"),
    "resend": ("npm", "resend"),
    "webflow": ("npm", "webflow-api"),
    "pusher": ("npm", "pusher"),
    "linear": ("npm", "@linear/sdk"),
    "elevenlabs": ("npm", "@elevenlabs/elevenlabs-js"),
    "stream-chat": ("npm", "stream-chat"),
    "liveblocks": ("npm", "@liveblocks/node"),
    "polar": ("npm", "@polar-sh/sdk"),
    "dodopayments": ("npm", "dodopayments"),
    "stytch": ("npm", "svix"),
}

# Secrets as each provider issues them (test values, never real ones).
RAW = "sdkcheck-secret-0123456789abcdef"
B64 = base64.b64encode(b"sdkcheck-key-0123456789abcdefghij").decode()
SECRETS = {
    "standard": "whsec_" + B64,
    "svix": "whsec_" + B64,
    "clerk": "whsec_" + B64,
    "resend": "whsec_" + B64,
    "openai": "whsec_" + B64,
    "replicate": "whsec_" + B64,
    "lithic": "whsec_" + B64,
    "liveblocks": "whsec_" + B64,
    "dodopayments": "whsec_" + B64,
    "stytch": "whsec_" + B64,
    "finch": B64,
    "sinch-voice": B64,
    "adyen": "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
    "adyen-platform": "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
}

# Schemes whose signer is a key pair the provider holds: hookgate holds only
# the public key and cannot sign, and the SDK only verifies. The adapter
# signs with a key pair generated for the run (Node's crypto); the SDK and
# hookgate must both accept that delivery.
KEY_PAIR = {"sendgrid", "discord"}

# Schemes whose signature travels in the body: `hookgate sign` refuses them,
# so only the SDK's signer direction runs.
BODY_SIGNED = {"adyen"}

# The key id (Worldline `X-GCS-KeyId`) and app key (Pusher `X-Pusher-Key`)
# that `hookgate sign` prints: the catalog's stand-in for the identifier the
# provider shows beside the secret. The SDKs are configured with it.
SIGN_KEY_ID = "hookgate-sign"

# @sinch/sdk-client's index reads @sinch/sdk-core's package.json for its user
# agent, and @sinch/sdk-core 1.5.0 could not be installed from the registry
# used (its @sinch/conversation 1.5.0 was missing), so the adapters load the
# client's authorization helper, the code that verifies and signs, by path.

EVT = "evt_sdkcheck_" + uuid.uuid4().hex[:12]


def body_for(scheme):
    """A body shaped like the provider's events, carrying the ids hookgate reads."""
    if scheme == "twilio":
        return "AccountSid=AC0001&CallSid=CA" + EVT[-12:] + "&From=%2B14155550100&To=%2B14155550199"
    if scheme == "plivo":
        return "CallUUID=" + EVT + "&Event=StartApp&From=14155550100&To=14155550199"
    if scheme == "gocardless":
        return json.dumps({"events": [{"id": EVT, "action": "created", "resource_type": "payments",
                                       "links": {"payment": "PM123"}, "created_at": "2024-01-01T00:00:00.000Z",
                                       "details": {"origin": "api", "cause": "payment_created"}, "metadata": {}}]},
                          separators=(",", ":"))
    if scheme == "adyen":
        return None  # built by the adapter around the signed item
    if scheme == "linear":
        # The SDK also holds the body's own webhookTimestamp (milliseconds) to a minute.
        return json.dumps({"action": "create", "type": "Issue", "data": {"id": EVT},
                           "webhookTimestamp": int(time.time() * 1000)}, separators=(",", ":"))
    if scheme == "liveblocks":
        # The SDK refuses event types it does not know.
        return json.dumps({"type": "storageUpdated", "data": {"roomId": EVT, "projectId": "p1",
                                                            "updatedAt": "2024-01-01T00:00:00.000Z"}},
                          separators=(",", ":"))
    if scheme == "mailgun":
        return None
    return json.dumps({
        "id": EVT, "apiVersion": "v1", "type": "sdkcheck.event", "event": "sdkcheck.event", "event_id": EVT,
        "event_type": "sdkcheck.event", "eventId": EVT, "eventType": "sdkcheck.event",
        "category": "sdkcheck.event", "trigger": "FILE.UPLOADED", "object": "event",
        "triggerType": "form_submission", "description": "sdkcheck.event",
        "data": {"id": "obj_1", "object": {"id": "obj_1"}}, "created_at": "2024-01-01T00:00:00Z",
        "action": {"id": EVT, "type": "sdkcheck.event"},
        "payload": {"resource_type": "check", "action": "check.completed", "object": {"id": "chk_1",
                    "status": "complete", "href": "https://api.onfido.com/v3.6/checks/chk_1"}},
    }, separators=(",", ":"))


JS_RUNNER = r"""
import { createRequire } from 'node:module';
import crypto from 'node:crypto';
const require = createRequire(import.meta.url);

const adapters = {};

adapters.stripe = {
  async verify(c) {
    const Stripe = require('stripe');
    const s = new (Stripe.default || Stripe)('sk_test_sdkcheck');
    await s.webhooks.constructEventAsync(c.body, c.headers['stripe-signature'], c.secret);
  },
  async sign(c) {
    const Stripe = require('stripe');
    const s = new (Stripe.default || Stripe)('sk_test_sdkcheck');
    return { 'stripe-signature': s.webhooks.generateTestHeaderString({ payload: c.body, secret: c.secret, timestamp: c.now }) };
  },
};

const octokit = {
  async verify(c) {
    const { verify } = await import('@octokit/webhooks-methods');
    if (!(await verify(c.secret, c.body, c.headers['x-hub-signature-256']))) throw new Error('verify returned false');
  },
  async sign(c) {
    const { sign } = await import('@octokit/webhooks-methods');
    return { 'x-hub-signature-256': await sign(c.secret, c.body), 'x-github-delivery': c.id, 'x-github-event': 'ping' };
  },
};
adapters.github = octokit;
adapters['github-enterprise'] = octokit;

adapters.shopify = {
  async verify(c) {
    await import('@shopify/shopify-api/adapters/node');
    const { shopifyApi, ApiVersion } = await import('@shopify/shopify-api');
    const stable = Object.values(ApiVersion).filter((v) => v !== 'unstable').sort();
    const shopify = shopifyApi({ apiKey: 'sdkcheck', apiSecretKey: c.secret, hostName: 'localhost', apiVersion: stable[stable.length - 1], isEmbeddedApp: false, logger: { level: 0, log: () => {} } });
    const req = { headers: c.headers, method: 'POST', url: c.path };
    const res = { statusCode: 200, setHeader() {}, end() {} };
    const got = await shopify.webhooks.validate({ rawBody: c.body, rawRequest: req, rawResponse: res });
    if (!got.valid) throw new Error('validate: ' + JSON.stringify(got));
  },
};

adapters.standard = {
  verify(c) { const { Webhook } = require('standardwebhooks'); new Webhook(c.secret).verify(c.body, c.headers); },
  sign(c) {
    const { Webhook } = require('standardwebhooks');
    const sig = new Webhook(c.secret).sign(c.id, new Date(c.now * 1000), c.body);
    return { 'webhook-id': c.id, 'webhook-timestamp': String(c.now), 'webhook-signature': sig };
  },
};

// Key pairs generated once for the scratch folder (see KEY_PAIR in
// sdkcheck.py), kept in keys.json so every node process signs with the same.
import fs from 'node:fs';
if (!fs.existsSync('keys.json')) {
  const pem = (k) => k.privateKey.export({ type: 'pkcs8', format: 'pem' });
  fs.writeFileSync('keys.json', JSON.stringify({
    ec: pem(crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' })),
    ed: pem(crypto.generateKeyPairSync('ed25519')),
  }));
}
const stored = JSON.parse(fs.readFileSync('keys.json', 'utf8'));
const pair = (pem) => { const privateKey = crypto.createPrivateKey(pem); return { privateKey, publicKey: crypto.createPublicKey(privateKey) }; };
const ec = pair(stored.ec);
const ed = pair(stored.ed);
const publicKeys = {
  sendgrid: ec.publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
  discord: ed.publicKey.export({ type: 'spki', format: 'der' }).subarray(-32).toString('hex'),
};

adapters.sendgrid = {
  verify(c) {
    const { EventWebhook, EventWebhookHeader } = require('@sendgrid/eventwebhook');
    const ew = new EventWebhook();
    const key = ew.convertPublicKeyToECDSA(c.secret);
    const ok = ew.verifySignature(key, c.body, c.headers[EventWebhookHeader.SIGNATURE().toLowerCase()], c.headers[EventWebhookHeader.TIMESTAMP().toLowerCase()]);
    if (!ok) throw new Error('verifySignature returned false');
  },
  sign(c) {
    const ts = String(c.now);
    const sig = crypto.sign('sha256', Buffer.from(ts + c.body), ec.privateKey).toString('base64');
    return { 'x-twilio-email-event-webhook-signature': sig, 'x-twilio-email-event-webhook-timestamp': ts };
  },
};

adapters.discord = {
  async verify(c) {
    const { verifyKey } = require('discord-interactions');
    if (!(await verifyKey(c.body, c.headers['x-signature-ed25519'], c.headers['x-signature-timestamp'], c.secret))) throw new Error('verifyKey returned false');
  },
  sign(c) {
    const ts = String(c.now);
    const sig = crypto.sign(null, Buffer.from(ts + c.body), ed.privateKey).toString('hex');
    return { 'x-signature-ed25519': sig, 'x-signature-timestamp': ts };
  },
};

adapters.metronome = {
  verify(c) {
    const Metronome = require('@metronome/sdk').default;
    new Metronome({ bearerToken: 'sdkcheck' }).webhooks.verifySignature(c.body, c.headers, c.secret);
  },
  sign(c) {
    // The SDK's own (private) signing function, as its verifySignature calls it.
    const Metronome = require('@metronome/sdk').default;
    const date = new Date(c.now * 1000).toUTCString();
    const sig = new Metronome({ bearerToken: 'sdkcheck' }).webhooks.signPayload(c.body, { date, secret: c.secret });
    return { 'metronome-webhook-signature': sig, 'x-metronome-date': date };
  },
};

adapters.increase = {
  verify(c) {
    const Increase = require('increase').default;
    new Increase({ apiKey: 'sdkcheck', webhookSecret: c.secret }).events.unwrap(c.body, { headers: c.headers });
  },
};

adapters.messagebird = {
  async verify(c) {
    const { verify } = require('messagebird/lib/webhook-signature-jwt');
    await verify(c.url, Buffer.from(c.body), c.headers['messagebird-signature-jwt'], crypto.createSecretKey(Buffer.from(c.secret)));
  },
};

adapters.adyen = {
  sign(c) {
    const { hmacValidator } = require('@adyen/api-library');
    const item = { pspReference: '7914073381342284', originalReference: '', merchantAccountCode: 'SdkcheckMerchant',
      merchantReference: c.id, amount: { value: 1130, currency: 'EUR' }, eventCode: 'AUTHORISATION', success: 'true',
      additionalData: {} };
    const v = new hmacValidator();
    item.additionalData.hmacSignature = v.calculateHmac(item, c.secret);
    if (!v.validateHMAC(item, c.secret)) throw new Error('the SDK refuses its own item');
    return { __body: JSON.stringify({ live: 'false', notificationItems: [{ NotificationRequestItem: item }] }) };
  },
};

adapters['adyen-platform'] = {
  verify(c) {
    const { hmacValidator } = require('@adyen/api-library');
    if (!new hmacValidator().validateHMACSignature(c.secret, c.headers['hmacsignature'], c.body)) throw new Error('validateHMACSignature returned false');
  },
  sign(c) {
    const { hmacValidator } = require('@adyen/api-library');
    return { hmacsignature: new hmacValidator().calculateHmac(c.body, c.secret) };
  },
};

// The helper module of @sinch/sdk-client, loaded by path: the package's
// index also reads @sinch/sdk-core's version for its user agent, and that
// package may not be installable alongside (see sdkcheck.py).
const sinch = () => require(process.cwd() + '/node_modules/@sinch/sdk-client/dist/utils/authorization.helper.js');
adapters['sinch-voice'] = {
  verify(c) {
    const auth = c.headers['authorization'] || '';
    const key = auth.slice('Application '.length, auth.lastIndexOf(':'));
    if (!sinch().validateAuthenticationHeader(key, c.secret, c.headers, c.body, c.path, 'POST')) throw new Error('validateAuthenticationHeader returned false');
  },
  sign(c) {
    const ts = new Date(c.now * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    const auth = sinch().generateAuthorizationHeader('POST', c.body, 'application/json', 'x-timestamp:' + ts, c.path, 'sdkcheck-app-key', c.secret);
    return { authorization: auth, 'x-timestamp': ts, 'content-type': 'application/json' };
  },
};
adapters.sinch = {
  verify(c) {
    if (!sinch().validateWebhookSignature(c.secret, c.headers, c.body)) throw new Error('validateWebhookSignature returned false');
  },
  sign(c) {
    const nonce = crypto.randomUUID();
    const ts = String(c.now);
    const sig = sinch().calculateWebhookSignature(sinch().computeSignedData(c.body, nonce, ts), c.secret);
    return { 'x-sinch-webhook-signature': sig, 'x-sinch-webhook-signature-nonce': nonce,
      'x-sinch-webhook-signature-timestamp': ts, 'x-sinch-webhook-signature-algorithm': 'HmacSHA256' };
  },
};
adapters['sinch-numbers'] = {
  verify(c) {
    if (!sinch().validateSignatureHeader(c.secret, c.headers, c.body)) throw new Error('validateSignatureHeader returned false');
  },
};

adapters.paddle = {
  async verify(c) {
    const { Paddle } = require('@paddle/paddle-node-sdk');
    const ok = await new Paddle('sdkcheck').webhooks.isSignatureValid(c.body, c.secret, c.headers['paddle-signature']);
    if (!ok) throw new Error('isSignatureValid returned false');
  },
};

adapters.mux = {
  async verify(c) {
    const Mux = require('@mux/mux-node').default;
    await new Mux({ tokenId: 'x', tokenSecret: 'y' }).webhooks.unwrap(c.body, c.headers, c.secret);
  },
};

adapters.hubspot = {
  verify(c) {
    const { Signature } = require('@hubspot/api-client');
    const ok = Signature.isValid({ method: 'POST', signatureVersion: 'v3', signature: c.headers['x-hubspot-signature-v3'],
      clientSecret: c.secret, requestBody: c.body, url: c.url, timestamp: Number(c.headers['x-hubspot-request-timestamp']) });
    if (!ok) throw new Error('isValid returned false');
  },
  sign(c) {
    const { Signature } = require('@hubspot/api-client');
    const ts = c.now * 1000;
    const sig = Signature.getSignature('POST', 'v3', { clientSecret: c.secret, requestBody: c.body, url: c.url, timestamp: ts });
    return { 'x-hubspot-signature-v3': sig, 'x-hubspot-request-timestamp': String(ts) };
  },
};

adapters.square = {
  async verify(c) {
    const { WebhooksHelper } = require('square');
    const ok = await WebhooksHelper.verifySignature({ requestBody: c.body, signatureHeader: c.headers['x-square-hmacsha256-signature'], signatureKey: c.secret, notificationUrl: c.url });
    if (!ok) throw new Error('verifySignature returned false');
  },
};

adapters.box = {
  async verify(c) {
    const { WebhooksManager } = require('box-typescript-sdk-gen/lib/managers/webhooks.generated');
    const ok = await WebhooksManager.validateMessage(c.body, c.headers, c.secret);
    if (!ok) throw new Error('validateMessage returned false');
  },
  async sign(c) {
    // The SDK's own signature function, as validateMessage calls it.
    const { computeWebhookSignature } = require(process.cwd() + '/node_modules/box-typescript-sdk-gen/lib/internal/utils.js');
    const headers = { 'box-delivery-id': c.id, 'box-delivery-timestamp': new Date(c.now * 1000).toISOString().replace(/\.\d+Z$/, '+00:00'),
      'box-signature-version': '1', 'box-signature-algorithm': 'HmacSHA256' };
    headers['box-signature-primary'] = await computeWebhookSignature(c.body, headers, c.secret);
    return headers;
  },
};

adapters['coinbase-commerce'] = {
  verify(c) { require('coinbase-commerce-node').Webhook.verifySigHeader(c.body, c.headers['x-cc-webhook-signature'], c.secret); },
};

adapters.razorpay = {
  verify(c) {
    const Razorpay = require('razorpay');
    if (!Razorpay.validateWebhookSignature(c.body, c.headers['x-razorpay-signature'], c.secret)) throw new Error('validateWebhookSignature returned false');
  },
};

adapters.gocardless = {
  verify(c) { require('gocardless-nodejs').parse(c.body, c.secret, c.headers['webhook-signature']); },
};

adapters.sanity = {
  async verify(c) {
    const { isValidSignature } = await import('@sanity/webhook');
    if (!(await isValidSignature(c.body, c.headers['sanity-webhook-signature'], c.secret))) throw new Error('isValidSignature returned false');
  },
  async sign(c) {
    const { encodeSignatureHeader } = await import('@sanity/webhook');
    return { 'sanity-webhook-signature': await encodeSignatureHeader(c.body, c.now * 1000, c.secret) };
  },
};

const stainless = (pkg, make) => ({
  async verify(c) {
    const Client = require(pkg).default;
    await make(new Client({ apiKey: 'sdkcheck', bearerToken: 'sdkcheck', organizationID: 'sdkcheck', accessToken: 'sdkcheck' }), c);
  },
});
adapters.orb = stainless('orb-billing', (cl, c) => cl.webhooks.verifySignature(c.body, c.headers, c.secret));
adapters.lithic = stainless('lithic', (cl, c) => cl.webhooks.verifySignature(c.body, c.headers, c.secret));
adapters.finch = stainless('@tryfinch/finch-api', (cl, c) => cl.webhooks.verifySignature(c.body, c.headers, c.secret));
adapters.openai = stainless('openai', (cl, c) => cl.webhooks.verifySignature(c.body, c.headers, c.secret));
adapters['modern-treasury'] = {
  verify(c) {
    const MT = require('modern-treasury').default;
    const cl = new MT({ apiKey: 'sdkcheck', organizationID: 'sdkcheck' });
    if (!cl.webhooks.validateSignature(c.body, c.headers, { key: c.secret })) throw new Error('validateSignature returned false');
  },
  sign(c) {
    const MT = require('modern-treasury').default;
    const cl = new MT({ apiKey: 'sdkcheck', organizationID: 'sdkcheck' });
    return { 'x-signature': cl.webhooks.getSignature(c.body, { key: c.secret }) };
  },
};

adapters.onfido = {
  verify(c) {
    const { WebhookEventVerifier } = require('@onfido/api');
    new WebhookEventVerifier(c.secret).readPayload(c.body, c.headers['x-sha2-signature']);
  },
};

adapters.line = {
  verify(c) {
    const { validateSignature } = require('@line/bot-sdk');
    if (!validateSignature(c.body, c.secret, c.headers['x-line-signature'])) throw new Error('validateSignature returned false');
  },
};

adapters.replicate = {
  async verify(c) {
    const { validateWebhook } = require('replicate');
    const ok = await validateWebhook({ id: c.headers['webhook-id'], timestamp: c.headers['webhook-timestamp'], body: c.body, secret: c.secret, signature: c.headers['webhook-signature'] });
    if (!ok) throw new Error('validateWebhook returned false');
  },
};

const workos = () => { const { WorkOS } = require('@workos-inc/node'); return new WorkOS('sk_test_sdkcheck'); };
adapters.workos = {
  async verify(c) {
    await workos().webhooks.constructEvent({ payload: JSON.parse(c.body), sigHeader: c.headers['workos-signature'], secret: c.secret });
  },
  async sign(c) {
    const ts = c.now * 1000;
    const sig = await workos().webhooks.computeSignature(ts, JSON.parse(c.body), c.secret);
    return { 'workos-signature': `t=${ts}, v1=${sig}` };
  },
};

adapters.easypost = {
  verify(c) {
    const EasyPost = require('@easypost/api');
    new EasyPost('sdkcheck').Utils.validateWebhook(Buffer.from(c.body), c.headers, c.secret);
  },
};

adapters.worldline = {
  async verify(c) {
    const connect = require('connect-sdk-nodejs');
    // The key id `hookgate sign` prints names the secret (SIGN_KEY_ID).
    const keys = { [c.keyId]: c.secret };
    const helper = connect.webhooks.v1.init({ getSecretKey: async (keyId) => { if (!(keyId in keys)) throw new Error('unknown key id ' + keyId); return keys[keyId]; } });
    await helper.unmarshal(c.body, c.headers);
  },
};

adapters.viber = {
  verify(c) {
    const Validator = require('viber-bot/lib/message/message-validator');
    const v = new Validator({ debug() {}, info() {}, warn() {}, error() {} }, c.secret);
    if (!v.validateMessage(c.headers['x-viber-content-signature'], c.body)) throw new Error('validateMessage returned false');
  },
};

const svixLike = {
  verify(c) { const { Webhook } = require('svix'); new Webhook(c.secret).verify(c.body, c.headers); },
  sign(c) {
    const { Webhook } = require('svix');
    const sig = new Webhook(c.secret).sign(c.id, new Date(c.now * 1000), c.body);
    return { 'svix-id': c.id, 'svix-timestamp': String(c.now), 'svix-signature': sig };
  },
};
adapters.svix = svixLike;
adapters.clerk = svixLike;
adapters.stytch = svixLike;

adapters.linear = {
  async verify(c) {
    const { LinearWebhookClient } = await import('@linear/sdk/webhooks');
    new LinearWebhookClient(c.secret).verify(Buffer.from(c.body), c.headers['linear-signature']);
  },
};

adapters.elevenlabs = {
  async verify(c) {
    const { ElevenLabsClient } = require('@elevenlabs/elevenlabs-js');
    await new ElevenLabsClient({ apiKey: 'sdkcheck' }).webhooks.constructEvent(c.body, c.headers['elevenlabs-signature'], c.secret);
  },
};

adapters['stream-chat'] = {
  verify(c) {
    const { StreamChat } = require('stream-chat');
    const client = new StreamChat('sdkcheck-key', c.secret);
    if (!client.verifyWebhook(c.body, c.headers['x-signature'])) throw new Error('verifyWebhook returned false');
  },
};

adapters.liveblocks = {
  verify(c) {
    const { WebhookHandler } = require('@liveblocks/node');
    new WebhookHandler(c.secret).verifyRequest({ headers: c.headers, rawBody: c.body });
  },
};

adapters.polar = {
  verify(c) {
    const { validateEvent, WebhookVerificationError } = require('@polar-sh/sdk/webhooks');
    try {
      validateEvent(c.body, c.headers, c.secret);
    } catch (e) {
      // validateEvent checks the signature, then parses the event against
      // Polar's schemas; a parse error means the signature held.
      if (e instanceof WebhookVerificationError || e.name !== 'SDKValidationError') throw e;
    }
  },
};

adapters.dodopayments = {
  verify(c) {
    const DodoPayments = require('dodopayments').default;
    new DodoPayments({ bearerToken: 'sdkcheck', webhookKey: c.secret }).webhooks.unwrap(c.body, { headers: c.headers });
  },
};
adapters.resend = {
  verify(c) {
    const { Resend } = require('resend');
    new Resend('re_sdkcheck').webhooks.verify({ payload: c.body, headers: { id: c.headers['svix-id'], timestamp: c.headers['svix-timestamp'], signature: c.headers['svix-signature'] }, webhookSecret: c.secret });
  },
};

adapters.webflow = {
  async verify(c) {
    const { WebflowClient } = require('webflow-api');
    const ok = await new WebflowClient({ accessToken: 'sdkcheck' }).webhooks.verifySignature({ headers: c.headers, body: c.body, secret: c.secret });
    if (!ok) throw new Error('verifySignature returned false');
  },
};

adapters.pusher = {
  verify(c) {
    const Pusher = require('pusher');
    // The app key `hookgate sign` prints (SIGN_KEY_ID) must be the SDK's.
    const p = new Pusher({ appId: '1', key: c.keyId, secret: c.secret, cluster: 'eu' });
    if (!p.webhook({ headers: c.headers, rawBody: c.body }).isValid()) throw new Error('isValid returned false');
  },
};

export async function run(tasks) {
  const out = [];
  for (const t of tasks) {
    const a = adapters[t.scheme];
    const f = a && a[t.op];
    if (!f) { out.push({ ok: false, missing: true }); continue; }
    try {
      const got = await f(t);
      out.push({ ok: true, headers: t.op === 'sign' ? got : undefined });
    } catch (e) {
      out.push({ ok: false, error: String(e && e.stack || e).split('\n').slice(0, 3).join(' | ') });
    }
  }
  return out;
}

if (process.argv[2] === 'keys') {
  process.stdout.write(JSON.stringify(publicKeys));
} else {
  let input = '';
  process.stdin.on('data', (d) => { input += d; });
  process.stdin.on('end', async () => { process.stdout.write(JSON.stringify(await run(JSON.parse(input)))); });
}
"""

PY_RUNNER = r'''
import json, sys, urllib.parse, uuid

def slack_verify(c):
    from slack_sdk.signature import SignatureVerifier
    h = c["headers"]
    if not SignatureVerifier(c["secret"]).is_valid(c["body"], h["x-slack-request-timestamp"], h["x-slack-signature"]):
        raise Exception("is_valid returned False")

def slack_sign(c):
    from slack_sdk.signature import SignatureVerifier
    ts = str(c["now"])
    return {"x-slack-signature": SignatureVerifier(c["secret"]).generate_signature(timestamp=ts, body=c["body"]),
            "x-slack-request-timestamp": ts}

def form(body):
    return dict(urllib.parse.parse_qsl(body, keep_blank_values=True))

def twilio_verify(c):
    from twilio.request_validator import RequestValidator
    if not RequestValidator(c["secret"]).validate(c["url"], form(c["body"]), c["headers"]["x-twilio-signature"]):
        raise Exception("validate returned False")

def twilio_sign(c):
    from twilio.request_validator import RequestValidator
    return {"x-twilio-signature": RequestValidator(c["secret"]).compute_signature(c["url"], form(c["body"])),
            "i-twilio-idempotency-token": c["id"], "content-type": "application/x-www-form-urlencoded"}

def plivo_verify(c):
    from plivo.utils.signature_v3 import validate_v3_signature
    h = c["headers"]
    if not validate_v3_signature("POST", c["url"], h["x-plivo-signature-v3-nonce"], c["secret"],
                                 h["x-plivo-signature-v3"], form(c["body"])):
        raise Exception("validate_v3_signature returned False")

def plivo_sign(c):
    from plivo.utils.signature_v3 import construct_post_url, get_signature_v3
    nonce = uuid.uuid4().hex
    sig = get_signature_v3(c["secret"], construct_post_url(c["url"], form(c["body"])), nonce)
    if isinstance(sig, bytes):
        sig = sig.decode()
    return {"x-plivo-signature-v3": sig, "x-plivo-signature-v3-nonce": nonce,
            "content-type": "application/x-www-form-urlencoded"}

ADAPTERS = {
    ("slack", "verify"): slack_verify, ("slack", "sign"): slack_sign,
    ("twilio", "verify"): twilio_verify, ("twilio", "sign"): twilio_sign,
    ("plivo", "verify"): plivo_verify, ("plivo", "sign"): plivo_sign,
}

out = []
for t in json.load(sys.stdin):
    f = ADAPTERS.get((t["scheme"], t["op"]))
    if f is None:
        out.append({"ok": False, "missing": True})
        continue
    try:
        got = f(t)
        out.append({"ok": True, "headers": got if t["op"] == "sign" else None})
    except Exception as e:
        out.append({"ok": False, "error": f"{type(e).__name__}: {e}"[:300]})
json.dump(out, sys.stdout)
'''


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def install(work, wanted):
    """Installs the wanted packages (current releases) into `work`; returns
    {(ecosystem, package): version}."""
    npm_dir, venv_dir = work / "node", work / "venv"
    need_npm = sorted({p for eco, p in wanted if eco == "npm"})
    need_py = sorted({p for eco, p in wanted if eco == "PyPI"})
    versions = {}
    if need_npm:
        npm_dir.mkdir(parents=True, exist_ok=True)
        if not (npm_dir / "package.json").exists():
            (npm_dir / "package.json").write_text('{"name":"sdkcheck","private":true}\n')
        missing = [p for p in need_npm if not (npm_dir / "node_modules" / p / "package.json").exists()]
        if missing:
            log(f"npm install {' '.join(NPM[p] for p in missing)}")
            run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"] + [NPM[p] for p in missing],
                cwd=npm_dir, stdout=subprocess.DEVNULL)
        for p in need_npm:
            meta = json.loads((npm_dir / "node_modules" / p / "package.json").read_text())
            versions[("npm", p)] = meta["version"]
    if need_py:
        py = venv_dir / "bin" / "python"
        if not py.exists():
            log(f"python3 -m venv {venv_dir}")
            run([sys.executable, "-m", "venv", str(venv_dir)])
        log(f"pip install {' '.join(PYPI[p] for p in need_py)}")
        run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--upgrade"]
            + [PYPI[p] for p in need_py], stdout=subprocess.DEVNULL)
        listing = json.loads(subprocess.run([str(py), "-m", "pip", "list", "--format=json"], check=True,
                                            capture_output=True, text=True).stdout)
        by_name = {d["name"].lower().replace("-", "_"): d["version"] for d in listing}
        for p in need_py:
            versions[("PyPI", p)] = by_name.get(p.lower().replace("-", "_"), "?")
    return versions


def call_js(work, tasks):
    script = work / "node" / "sdkcheck-adapters.mjs"
    script.write_text(JS_RUNNER)
    got = subprocess.run(["node", str(script)], input=json.dumps(tasks), capture_output=True, text=True,
                         cwd=work / "node", timeout=600)
    if got.returncode != 0:
        raise SystemExit(f"node adapters failed: {got.stderr[-2000:]}")
    return json.loads(got.stdout)


def js_adapters(work):
    script = work / "node" / "sdkcheck-adapters.mjs"
    script.write_text(JS_RUNNER)
    return script


def call_py(work, tasks):
    script = work / "sdkcheck-adapters.py"
    script.write_text(PY_RUNNER)
    got = subprocess.run([str(work / "venv" / "bin" / "python"), str(script)], input=json.dumps(tasks),
                         capture_output=True, text=True, timeout=600)
    if got.returncode != 0:
        raise SystemExit(f"python adapters failed: {got.stderr[-2000:]}")
    return json.loads(got.stdout)


class Upstream(http.server.BaseHTTPRequestHandler):
    """The app: records what hookgate forwards, answers 200."""
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        Upstream.received.append((self.path, dict(self.headers), body))
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def toml_str(s):
    return json.dumps(s)


def write_config(path, port, admin, upstream, schemes, secrets):
    lines = [
        "[server]", f'listen = "127.0.0.1:{port}"', f'upstream = "http://127.0.0.1:{upstream}"',
        "[admin]", f'listen = "127.0.0.1:{admin}"',
        "[store]", 'kind = "memory"', "",
    ]
    for name in schemes:
        lines += ["[[source]]", f"name = {toml_str(name)}", f'path = "/hooks/{name}"', f"scheme = {toml_str(name)}",
                  f"secrets = [{toml_str(secrets[name])}]"]
        if name in ("twilio", "plivo", "sinch-voice", "hubspot", "square", "messagebird", "trello"):
            lines.append(f'public_url = "http://127.0.0.1:{port}/hooks/{name}"')
        lines.append("")
    path.write_text("\n".join(lines))


def documented():
    """scheme -> the "SDK checked" cell of docs/providers.md."""
    out = {}
    for line in (ROOT / "docs" / "providers.md").read_text().splitlines():
        m = re.match(r"\| `([a-z0-9-]+)` \|", line)
        if m:
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            out[m.group(1)] = cells[-1]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("schemes", nargs="*", help="only these schemes")
    ap.add_argument("--work", help="scratch folder to use (default: a new temporary one)")
    ap.add_argument("--no-build", action="store_true", help="use target/debug/hookgate as it is")
    args = ap.parse_args()
    schemes = args.schemes or list(SDKS)
    unknown = [s for s in schemes if s not in SDKS]
    if unknown:
        raise SystemExit(f"no SDK check for: {', '.join(unknown)}")
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="hookgate-sdkcheck-"))
    work.mkdir(parents=True, exist_ok=True)
    log(f"scratch folder: {work}")

    if not args.no_build:
        log("cargo build")
        run(["cargo", "build", "--quiet", "--bin", "hookgate"], cwd=ROOT)
    binary = ROOT / "target" / "debug" / "hookgate"

    versions = install(work, {SDKS[s] for s in schemes})
    secrets = {s: SECRETS.get(s, RAW) for s in schemes}
    if KEY_PAIR & set(schemes):
        script = js_adapters(work)
        keys = json.loads(subprocess.run(["node", str(script), "keys"], capture_output=True, text=True,
                                         check=True, cwd=work / "node").stdout)
        secrets.update({s: keys[s] for s in KEY_PAIR & set(schemes)})

    port, admin, up_port = free_port(), free_port(), free_port()
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", up_port), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    config = work / "hookgate.toml"
    write_config(config, port, admin, up_port, schemes, secrets)

    now = int(time.time())
    bodies = {s: body_for(s) for s in schemes}
    results = {s: {} for s in schemes}

    # 1. hookgate signs, the SDK verifies.
    tasks = {"npm": [], "PyPI": []}
    for s in schemes:
        if s in KEY_PAIR or s in BODY_SIGNED:
            continue
        body_file = work / f"body-{s}"
        body_file.write_text(bodies[s])
        got = subprocess.run([str(binary), "sign", "--config", str(config), "--source", s, "--body-file",
                              str(body_file), "--id", EVT, "--timestamp", str(now)],
                             capture_output=True, text=True)
        if got.returncode != 0:
            results[s]["verify"] = f"hookgate sign failed: {got.stderr.strip()}"
            continue
        headers = {}
        for line in got.stdout.splitlines():
            name, _, value = line.partition(": ")
            headers[name.lower()] = value
        headers.setdefault("content-type", "application/json")
        tasks[SDKS[s][0]].append(task(s, "verify", secrets[s], headers, bodies[s], now, port))
        # The control: the same headers over a changed body must be refused,
        # or the adapter proves nothing.
        tasks[SDKS[s][0]].append(dict(task(s, "verify", secrets[s], headers, tampered(bodies[s]), now, port),
                                      control=True))
    # 2. The SDK signs (key-pair schemes: the run's key signs), hookgate must forward.
    for s in schemes:
        tasks[SDKS[s][0]].append(task(s, "sign", secrets[s], {}, bodies[s] or "", now, port))

    answers = []
    if tasks["npm"]:
        answers += list(zip(tasks["npm"], call_js(work, tasks["npm"])))
    if tasks["PyPI"]:
        answers += list(zip(tasks["PyPI"], call_py(work, tasks["PyPI"])))

    proc = subprocess.Popen([str(binary), "run", "--config", str(config), "--log-format", "text"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_ready(admin, proc)
        for t, a in answers:
            s = t["scheme"]
            if t.get("control"):
                if a["ok"]:
                    results[s]["control"] = "FAIL the SDK also accepted a changed body"
                continue
            if t["op"] == "verify":
                results[s]["verify"] = "ok" if a["ok"] else f"FAIL {a.get('error', 'no adapter')}"
                continue
            if a.get("missing"):
                results[s]["sign"] = "no signer"
                continue
            if not a["ok"]:
                results[s]["sign"] = f"FAIL SDK signer: {a.get('error')}"
                continue
            headers = dict(a["headers"])
            body = headers.pop("__body", t["body"])
            results[s]["sign"] = deliver(port, s, headers, body)
            if s in KEY_PAIR:
                # The SDK's verify on the same delivery (hookgate cannot sign these).
                check = task(s, "verify", secrets[s], {k.lower(): v for k, v in headers.items()}, body, now, port)
                control = dict(check, body=tampered(body))
                v, c = call_js(work, [check, control])
                results[s]["verify"] = "ok (the run's key pair)" if v["ok"] else f"FAIL {v.get('error')}"
                if c["ok"]:
                    results[s]["control"] = "FAIL the SDK also accepted a changed body"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        upstream.shutdown()

    docs = documented()
    failed = 0
    log("")
    for s in schemes:
        eco, pkg = SDKS[s]
        version = versions.get((eco, pkg), "?")
        label = f"{eco} {pkg} {version}"
        r = results[s]
        verify = r.get("verify", "n/a (the signature travels in the body)" if s in BODY_SIGNED else "?")
        sign = r.get("sign", "?")
        if "control" in r:
            verify += "; " + r["control"]
        bad = (verify.startswith(("FAIL", "hookgate sign failed", "?")) or "FAIL" in verify
               or sign.startswith(("FAIL", "?")))
        failed += bad
        print(f"{'FAIL' if bad else 'ok  '} {s:18} {label:45} verify: {verify}; sign: {sign}")
        cell = docs.get(s, "")
        if f"{pkg} {version}" not in cell:
            print(f"     docs/providers.md says {cell!r}; installed {label}: update the catalog row")
    print(f"\n{len(schemes) - failed} passed, {failed} failed")
    return 1 if failed else 0


def tampered(body):
    """`body` with its last letter or digit changed: the same shape (it still
    parses, so an SDK that verifies a re-serialized body sees the change
    too), no longer what was signed."""
    for i in range(len(body) - 1, -1, -1):
        ch = body[i]
        if ch.isdigit():
            return body[:i] + str((int(ch) + 1) % 10) + body[i + 1:]
        if ch.isalpha() and ch.isascii():
            return body[:i] + ch.swapcase() + body[i + 1:]
    return body + " "


def task(scheme, op, secret, headers, body, now, port):
    return {"scheme": scheme, "op": op, "secret": secret, "headers": headers, "body": body, "now": now,
            "keyId": SIGN_KEY_ID,
            "id": "msg_" + uuid.uuid4().hex, "url": f"http://127.0.0.1:{port}/hooks/{scheme}",
            "path": f"/hooks/{scheme}"}


def deliver(port, scheme, headers, body):
    before = len(Upstream.received)
    headers = {k: v for k, v in headers.items()}
    headers.setdefault("content-type", "application/json")
    status, answer = post(port, scheme, headers, body)
    if not 200 <= status < 300:
        return f"FAIL hookgate answered {status} {answer.decode(errors='replace')[:200]}"
    got = Upstream.received[before:]
    if not any(p == f"/hooks/{scheme}" and b == body.encode() for p, _, b in got):
        return f"FAIL hookgate answered {status} {answer.decode(errors='replace')[:120]} but forwarded nothing"
    # The control: the same headers over a changed body are refused, and
    # nothing more reaches the app.
    before = len(Upstream.received)
    status, answer = post(port, scheme, headers, tampered(body))
    if status != 400 or len(Upstream.received) != before:
        return f"FAIL a changed body got {status} {answer.decode(errors='replace')[:120]}"
    return "ok (forwarded; a changed body refused)"


def post(port, scheme, headers, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/hooks/{scheme}", data=body.encode(), method="POST",
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def wait_ready(admin, proc):
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"hookgate exited: {proc.stderr.read().decode(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{admin}/readyz", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("hookgate did not become ready")


if __name__ == "__main__":
    sys.exit(main())
