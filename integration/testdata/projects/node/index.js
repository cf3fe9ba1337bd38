'use strict';
const ms = require('ms');

// total sums durations written as ms writes them ("1h", "30m") and
// returns the sum in the same form, in its longest unit.
function total(...durations) {
  return ms(durations.reduce((sum, d) => sum + ms(d), 0), { long: false });
}

module.exports = { total };
