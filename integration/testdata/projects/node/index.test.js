'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { total } = require('./index');

test('sums durations', () => {
  assert.strictEqual(total('1h', '30m', '30m'), '2h');
  assert.strictEqual(total('90s'), '2m');
});
