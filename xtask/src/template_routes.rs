//! The HTTP API's routes as `template.yaml` declares them (each function's `HttpApi` events):
//! the one list `cargo xtask serve` routes by and `tests/routes.rs` checks every function's
//! router against. The template is read line by line (its CloudFormation tags need no parser).

/// Who the HTTP API lets through to a route (its `Auth.Authorizer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authorizer {
    None,
    Iam,
    UserJwt,
}

/// One route of the HTTP API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The function's binary (`BuildProperties.Binary`): its crate.
    pub function: String,
    pub method: String,
    /// With `{name}` for each path parameter.
    pub path: String,
    pub authorizer: Authorizer,
}

/// The routes of `template`, in its order.
pub fn parse(template: &str) -> Vec<Route> {
    let mut routes: Vec<Route> = Vec::new();
    let (mut function, mut open) = (String::new(), false);
    for line in template.lines() {
        let indent = line.len() - line.trim_start().len();
        let text = line.trim();
        if indent == 2 && text.ends_with(':') {
            // The next resource.
            (function, open) = (String::new(), false);
        }
        let Some((key, value)) = text.split_once(": ") else { continue };
        match key {
            "Binary" => function = value.to_owned(),
            "Type" => {
                open = value == "HttpApi";
                if open {
                    let route = Route {
                        function: function.clone(),
                        method: String::new(),
                        path: String::new(),
                        authorizer: Authorizer::None,
                    };
                    routes.push(route);
                }
            }
            "Method" if open => routes.last_mut().expect("an open route").method = value.to_owned(),
            "Path" if open => routes.last_mut().expect("an open route").path = value.to_owned(),
            "Authorizer" if open => {
                routes.last_mut().expect("an open route").authorizer = match value {
                    "AWS_IAM" => Authorizer::Iam,
                    _ => Authorizer::UserJwt,
                }
            }
            _ => {}
        }
    }
    routes
}

/// Whether `path` is one of `pattern`'s (`/users/{userId}/feedback`): a parameter takes one
/// non-empty segment.
pub fn matches(pattern: &str, path: &str) -> bool {
    let (pattern, path) = (pattern.trim_matches('/'), path.trim_matches('/'));
    let (mut p, mut s) = (pattern.split('/'), path.split('/'));
    loop {
        match (p.next(), s.next()) {
            (None, None) => return true,
            (Some(want), Some(got)) if want.starts_with('{') => {
                if got.is_empty() {
                    return false;
                }
            }
            (Some(want), Some(got)) if want == got => {}
            _ => return false,
        }
    }
}
