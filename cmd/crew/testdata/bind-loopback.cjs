// Test-only preload: the reference MCP server calls app.listen(PORT), which
// binds every interface; this keeps it on 127.0.0.1.
const net = require('net');
const orig = net.Server.prototype.listen;
net.Server.prototype.listen = function (...a) {
  const p = a[0];
  const isPort = typeof p === 'number' || (typeof p === 'string' && /^\d+$/.test(p));
  if (isPort && typeof a[1] !== 'string') {
    return orig.call(this, { port: Number(p), host: '127.0.0.1' }, ...a.slice(1).filter(x => typeof x === 'function'));
  }
  return orig.apply(this, a);
};
