# pint (https://github.com/cloudflare/pint, v0.87.0) configuration for the rules
# in this directory, following kubernetes-mixin's .pint.hcl. Offline use:
#   pint --no-color -c alerts/.pint.hcl lint --fail-on=warning alerts/alerts.yml alerts/recording_rules.yml
# pint is not a dependency of this repository and this file has not been run
# through it here; alerts_test.go enforces the same style rules without it.

checks {
  # The checks kubernetes-mixin disables too.
  disabled = ["promql/impossible", "rule/dependency", "promql/fragile", "promql/nan"]
}

rule {
  match {
    kind = "alerting"
  }

  label "severity" {
    severity = "bug"
    value    = "(critical|warning|info)"
    required = true
  }

  annotation "summary" {
    severity = "bug"
    required = true
  }

  annotation "description" {
    severity = "bug"
    required = true
  }

  annotation "runbook_url" {
    severity = "bug"
    value    = "https://github.com/roce-exporter/roce_exporter/blob/main/alerts/runbooks/.+[.]md"
    required = true
  }
}
