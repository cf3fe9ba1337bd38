# Functions that make the node's certificates and kubeconfigs with openssl
# (kubeadm needs systemd and registry images). Keys are ECDSA P-256;
# certificates last ten years: this is a test node. Sourced after config.sh
# and daemons.sh.

PKI=$CLUSTER_DIR/pki

# make_ca makes the cluster's certificate authority once.
make_ca() {
	[ -f "$PKI/ca.crt" ] && return
	mkdir -p "$PKI"
	chmod 0700 "$PKI"
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/ca.key" 2>/dev/null
	openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=wink-mcp-test-cluster-ca" -days 3650 \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out "$PKI/ca.crt"
}

# make_cert makes $PKI/$1.crt and .key once, signed by the CA, for subject $2
# with extended key usage $3 (serverAuth, clientAuth) and subjectAltName $4.
make_cert() {
	local name=$1 subject=$2 usage=$3 san=${4:-}
	[ -f "$PKI/$name.crt" ] && return
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$name.key" 2>/dev/null
	local ext="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=$usage"
	[ -n "$san" ] && ext+=$'\n'"subjectAltName=$san"
	openssl req -new -key "$PKI/$name.key" -subj "$subject" |
		openssl x509 -req -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 3650 \
			-extfile <(printf '%s\n' "$ext") -out "$PKI/$name.crt" 2>/dev/null
}

# make_kubeconfig writes $CLUSTER_DIR/$1.kubeconfig once: the API server and
# the client certificate $1, all embedded, so one file is all a client needs.
make_kubeconfig() {
	local name=$1 file=$CLUSTER_DIR/$1.kubeconfig
	[ -f "$file" ] && return
	cat >"$file.tmp" <<-YAML
		apiVersion: v1
		kind: Config
		clusters:
		- name: wink-mcp-test
		  cluster:
		    server: https://$NODE_IP:$API_PORT
		    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
		users:
		- name: $name
		  user:
		    client-certificate-data: $(base64 -w0 "$PKI/$name.crt")
		    client-key-data: $(base64 -w0 "$PKI/$name.key")
		contexts:
		- name: wink-mcp-test
		  context:
		    cluster: wink-mcp-test
		    user: $name
		current-context: wink-mcp-test
	YAML
	chmod 0600 "$file.tmp"
	mv "$file.tmp" "$file"
}

# make_pki makes every certificate, key and kubeconfig the node needs.
make_pki() {
	make_ca
	make_cert apiserver "/CN=kube-apiserver" serverAuth \
		"IP:$NODE_IP,IP:$SERVICE_IP,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	make_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
	make_cert kubelet-server "/CN=$NODE_NAME" serverAuth "IP:$NODE_IP,DNS:$NODE_NAME"
	make_cert admin "/O=system:masters/CN=wink-mcp-admin" clientAuth
	make_cert controller-manager "/CN=system:kube-controller-manager" clientAuth
	make_cert scheduler "/CN=system:kube-scheduler" clientAuth
	make_cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
	make_cert kube-router "/CN=wink-kube-router" clientAuth
	if [ ! -f "$PKI/sa.key" ]; then
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/sa.key" 2>/dev/null
		openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
	fi
	local k
	for k in admin controller-manager scheduler kubelet kube-router; do make_kubeconfig "$k"; done
}
