# Rancher's local-path-provisioner on the test node (sourced by up.sh after
# config.sh and daemons.sh): each PersistentVolumeClaim of the StorageClass
# $STORAGE_CLASS, the cluster's default, gets a folder under
# $LOCAL_PATH_VOLUMES, made and deleted by a helper Pod of the imported
# workspace image (no registry is reachable, and it has sh, mkdir and rm).
# The provisioner runs as a daemon against the admin kubeconfig, its
# configuration in files rather than its ConfigMap; the ConfigMap holds
# only the helper Pod's setup and teardown scripts, which it mounts.

# The provisioner's name in its StorageClass and its PersistentVolumes.
LOCAL_PATH_PROVISIONER=rancher.io/local-path
LOCAL_PATH_HELPER_IMAGE=${CLUSTER_IMAGES%% *}

write_local_path_configs() {
	mkdir -p "$LOCAL_PATH_DIR" "$LOCAL_PATH_VOLUMES"
	cat >"$LOCAL_PATH_DIR/config.json" <<-JSON
		{"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": ["$LOCAL_PATH_VOLUMES"]}]}
	JSON
	# Root in the helper Pod makes and deletes the folder; nothing else.
	cat >"$LOCAL_PATH_DIR/helper-pod.yaml" <<-YAML
		apiVersion: v1
		kind: Pod
		metadata:
		  name: helper-pod
		spec:
		  automountServiceAccountToken: false
		  enableServiceLinks: false
		  containers:
		  - name: helper-pod
		    image: $LOCAL_PATH_HELPER_IMAGE
		    imagePullPolicy: Never
	YAML
	# The folder is root's and closed to others: a Pod's fsGroup gives it
	# to the Pod's group as the kubelet mounts it (volumeType local).
	cat >"$LOCAL_PATH_DIR/objects.yaml" <<-YAML
		apiVersion: v1
		kind: Namespace
		metadata:
		  name: $LOCAL_PATH_NAMESPACE
		---
		apiVersion: v1
		kind: ServiceAccount
		metadata:
		  name: local-path-provisioner
		  namespace: $LOCAL_PATH_NAMESPACE
		automountServiceAccountToken: false
		---
		apiVersion: v1
		kind: ConfigMap
		metadata:
		  name: local-path-config
		  namespace: $LOCAL_PATH_NAMESPACE
		data:
		  setup: |-
		    #!/bin/sh
		    set -eu
		    mkdir -m 0700 -p "\$VOL_DIR"
		  teardown: |-
		    #!/bin/sh
		    set -eu
		    rm -rf "\$VOL_DIR"
		---
		apiVersion: storage.k8s.io/v1
		kind: StorageClass
		metadata:
		  name: $STORAGE_CLASS
		  annotations:
		    storageclass.kubernetes.io/is-default-class: "true"
		    defaultVolumeType: local
		provisioner: $LOCAL_PATH_PROVISIONER
		volumeBindingMode: WaitForFirstConsumer
		reclaimPolicy: Delete
	YAML
}

start_local_path() {
	write_local_path_configs
	# Applied only when changed: kubectl apply costs a second or so.
	local sum
	sum=$(sha256sum "$LOCAL_PATH_DIR/objects.yaml" | cut -d' ' -f1)
	if [ "$(cat "$LOCAL_PATH_DIR/objects.applied" 2>/dev/null)" != "$sum" ] ||
		! kctl get storageclass "$STORAGE_CLASS" >/dev/null 2>&1; then
		log "applying the local-path provisioner's objects and StorageClass $STORAGE_CLASS"
		kctl apply -f "$LOCAL_PATH_DIR/objects.yaml" >/dev/null
		echo "$sum" >"$LOCAL_PATH_DIR/objects.applied"
	fi
	start_daemon local-path-provisioner "$LOCAL_PATH_BIN/local-path-provisioner" start \
		--kubeconfig "$CLUSTER_KUBECONFIG" --namespace "$LOCAL_PATH_NAMESPACE" \
		--provisioner-name "$LOCAL_PATH_PROVISIONER" --service-account-name local-path-provisioner \
		--configmap-name local-path-config --config "$LOCAL_PATH_DIR/config.json" \
		--helper-pod-file "$LOCAL_PATH_DIR/helper-pod.yaml" --helper-image "$LOCAL_PATH_HELPER_IMAGE"
}
