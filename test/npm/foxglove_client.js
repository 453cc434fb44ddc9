// The official Foxglove WebSocket client (@foxglove/ws-protocol's FoxgloveClient on the `ws`
// package) against a running `bondsim-ros up --foxglove`, as Foxglove's app uses it: connect,
// subscribe to every advertised channel, read the URDF from /robot_description and fetch each
// mesh it names through the server (fetchAsset), ask for the /robot_description parameter, then
// try to set it.
// Prints one JSON summary on stdout; exit status 0 when every channel delivered a message and
// every mesh fetch was answered, 1 otherwise (timeout, refused connection, protocol error).
//
//   node foxglove_client.js ws://127.0.0.1:8765 [--subprotocol NAME] [--timeout SECONDS]
"use strict";

const crypto = require("crypto");
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const WebSocket = require("ws");

const args = process.argv.slice(2);
const url = args[0];
const option = (name, fallback) => {
  const k = args.indexOf(name);
  return k >= 0 ? args[k + 1] : fallback;
};
// the client's own subprotocol unless the test asks for another
const subprotocol = option("--subprotocol", FoxgloveClient.SUPPORTED_SUBPROTOCOL);
const timeout = Number(option("--timeout", "30"));

const summary = {
  offered: subprotocol,
  subprotocol: null,
  serverInfo: null,
  channels: {}, // topic -> {schemaName, encoding, messages, first (base64)}
  assets: {}, // uri -> {status, bytes, sha256, error}
  parameters: null,
  setAnswer: null, // the parameterValues answering setParameters
  errors: [],
  complete: false,
};
const byChannel = new Map(); // channel id -> topic
const bySubscription = new Map(); // subscription id -> topic
const assetRequests = new Map(); // request id -> uri
let nextRequest = 1;
let urdfSeen = false;

const ws = new WebSocket(url, [subprotocol]);
const client = new FoxgloveClient({ ws });

let finished = false;

function finish(ok) {
  // once: messages still arrive while the connection closes
  if (finished) return;
  finished = true;
  summary.complete = ok;
  clearTimeout(timer);
  process.stdout.write(JSON.stringify(summary) + "\n", () => process.exit(ok ? 0 : 1));
  try {
    client.close();
  } catch (_) {
    // already closed
  }
}

function done() {
  const topics = Object.values(summary.channels);
  return (
    topics.length > 0 &&
    topics.every((c) => c.messages > 0) &&
    urdfSeen &&
    assetRequests.size === Object.keys(summary.assets).length &&
    summary.parameters !== null &&
    summary.setAnswer !== null
  );
}

const timer = setTimeout(() => {
  summary.errors.push(`timeout after ${timeout} s`);
  finish(false);
}, timeout * 1000);

client.on("open", () => {
  summary.subprotocol = ws.protocol;
  client.getParameters(["/robot_description"], "urdf");
});
client.on("error", (error) => summary.errors.push(String(error && error.message ? error.message : error)));
client.on("close", (event) => {
  if (!finished) {
    summary.errors.push(`closed: ${event.code} ${event.reason || ""}`.trim());
    finish(false);
  }
});
client.on("serverInfo", (info) => {
  summary.serverInfo = { name: info.name, capabilities: info.capabilities };
});
client.on("advertise", (channels) => {
  for (const c of channels) {
    if (byChannel.has(c.id)) continue;
    byChannel.set(c.id, c.topic);
    summary.channels[c.topic] = { schemaName: c.schemaName, encoding: c.encoding, messages: 0, first: null };
    bySubscription.set(client.subscribe(c.id), c.topic);
  }
});
client.on("message", ({ subscriptionId, data }) => {
  const topic = bySubscription.get(subscriptionId);
  const channel = summary.channels[topic];
  if (!channel) {
    summary.errors.push(`message for unknown subscription ${subscriptionId}`);
    return;
  }
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  channel.messages += 1;
  if (channel.first === null) channel.first = bytes.toString("base64");
  if (topic === "/robot_description" && !urdfSeen) {
    urdfSeen = true;
    const urdf = JSON.parse(bytes.toString("utf8")).data;
    const uris = new Set([...urdf.matchAll(/filename="([^"]+)"/g)].map((m) => m[1]));
    for (const uri of uris) {
      const id = nextRequest++;
      assetRequests.set(id, uri);
      client.fetchAsset(uri, id);
    }
  }
  if (done()) finish(true);
});
client.on("fetchAssetResponse", (response) => {
  const uri = assetRequests.get(response.requestId);
  if (uri === undefined) {
    summary.errors.push(`fetchAsset answer to unknown request ${response.requestId}`);
    return;
  }
  if (response.status === 0) {
    const data = Buffer.from(response.data.buffer, response.data.byteOffset, response.data.byteLength);
    summary.assets[uri] = {
      status: 0,
      bytes: data.length,
      sha256: crypto.createHash("sha256").update(data).digest("hex"),
    };
  } else {
    summary.assets[uri] = { status: response.status, error: response.error };
  }
  if (done()) finish(true);
});
client.on("parameterValues", (event) => {
  const values = event.parameters.map((p) => ({ name: p.name, length: String(p.value).length }));
  if (event.id === "urdf") {
    summary.parameters = values;
    // then try to overwrite it, as a user editing it in Foxglove's Parameters panel would: the
    // answer carries the value the server holds afterwards
    client.setParameters([{ name: "/robot_description", value: "x" }], "set");
  } else if (event.id === "set") {
    summary.setAnswer = values;
  }
  if (done()) finish(true);
});
