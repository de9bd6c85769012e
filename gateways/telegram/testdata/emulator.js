// Starts telegram-test-api on 127.0.0.1:<port> for the Go tests and prints
// one line "ready <url>" when it listens. Usage:
//   node emulator.js <node_modules dir> <port>
'use strict';
const path = require('path');
const [modules, port] = process.argv.slice(2);
const TelegramServer = require(path.join(modules, 'telegram-test-api'));
const server = new TelegramServer({ host: '127.0.0.1', port: Number(port), storeTimeout: 600 });
server.start().then(() => {
  process.stdout.write(`ready ${server.config.apiURL}\n`);
}, (err) => {
  process.stderr.write(`${err}\n`);
  process.exit(1);
});
// The test closes stdin to stop the server.
process.stdin.on('end', () => server.stop().then(() => process.exit(0)));
process.stdin.resume();
