package workspace

import (
	"strings"
	"testing"
)

// passwdIDs finds a user's ids and refuses root's and malformed ones.
func TestPasswdIDs(t *testing.T) {
	const passwd = "root:x:0:0:root:/root:/bin/bash\ntoor:x:0:100::/:/bin/sh\nwheel:x:100:0::/:/bin/sh\n" +
		"bad:x:a:1::/:/bin/sh\npostgres:x:103:106:PostgreSQL administrator,,,:/var/lib/postgresql:/bin/bash\n"
	if ids, err := passwdIDs(passwd, "postgres"); err != nil || ids != "103:106" {
		t.Errorf("postgres: %q %v", ids, err)
	}
	for name, want := range map[string]string{
		"root": "never runs as root", "toor": "never runs as root", "wheel": "never runs as root",
		"bad": "not numbers", "nobody2": `no user "nobody2"`, "postgre": `no user "postgre"`,
	} {
		if _, err := passwdIDs(passwd, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", name, err, want)
		}
	}
}
