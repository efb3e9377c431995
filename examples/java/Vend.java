import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.TreeMap;
import java.util.stream.Collectors;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Vends provider tokens from the token vending function URL with the JDK alone (Java 17):
 * java.net.http and a SigV4 signature (service "lambda") computed with javax.crypto.
 * Credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN,
 * as Lambda sets them; elsewhere, take them from your credential provider. Each scope
 * given is asked for in turn through one TokenCache, so a repeated scope is answered
 * from the cache; no scope: the unscoped token.
 *
 * <pre>
 * TOKEN_VENDING_URL=https://&lt;url-id&gt;.lambda-url.eu-west-1.on.aws java Vend.java ba_123
 * </pre>
 */
public final class Vend {
  private static final DateTimeFormatter AMZ_DATE =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'");
  /** Retries of a 503 or 429; a Retry-After over MAX_WAIT_SECONDS is not waited for. */
  private static final int MAX_RETRIES = 2;
  private static final int MAX_WAIT_SECONDS = 10;
  private static final Pattern URL_HOST =
      Pattern.compile("[^.]+\\.lambda-url\\.([a-z0-9-]+)\\.on\\.aws");

  /** The URL's own region (&lt;url-id&gt;.lambda-url.&lt;region&gt;.on.aws), else AWS_REGION. */
  static String regionOf(String baseUrl) {
    Matcher m = URL_HOST.matcher(String.valueOf(URI.create(baseUrl).getHost()));
    return m.matches() ? m.group(1) : System.getenv().getOrDefault("AWS_REGION", "us-east-1");
  }

  /** The vend answer's JSON, or an exception with the status and body. */
  static String vendToken(String baseUrl, String region, String scope, int minTtl,
      String accessKeyId, String secretAccessKey, String sessionToken) throws Exception {
    // The canonical query: parameters sorted by name, RFC 3986 percent-encoded. Sent as signed.
    Map<String, String> params = new TreeMap<>();
    params.put("min_ttl", Integer.toString(minTtl));
    if (scope != null) params.put("scope", scope);
    String query = params.entrySet().stream()
        .map(e -> encode(e.getKey()) + "=" + encode(e.getValue()))
        .collect(Collectors.joining("&"));
    // A stack's VendUrl output ends with "/".
    URI uri = URI.create(baseUrl.replaceAll("/+$", "") + "/token?" + query);

    for (int attempt = 0; ; attempt++) {
      HttpResponse<String> response = send(uri, query, region, accessKeyId, secretAccessKey,
          sessionToken);
      if (response.statusCode() == 200) return response.body();
      // 503 and 429: retried after Retry-After (1 s, then 2 s, without one).
      long wait = response.headers().firstValue("retry-after").filter(v -> v.matches("\\d{1,9}"))
          .map(Long::parseLong).orElse(attempt + 1L);
      boolean retriable = response.statusCode() == 503 || response.statusCode() == 429;
      if (!retriable || attempt == MAX_RETRIES || wait > MAX_WAIT_SECONDS) {
        // 403 {"Message":"Forbidden"}: refused by the URL (signature, IAM);
        // otherwise application/problem+json {"status","code","title","detail"}.
        throw new IllegalStateException("vend answered " + response.statusCode() + ": "
            + response.body());
      }
      Thread.sleep(wait * 1000);
    }
  }

  /** One signed GET of uri, whose query is already in canonical form. */
  static HttpResponse<String> send(URI uri, String query, String region, String accessKeyId,
      String secretAccessKey, String sessionToken) throws Exception {
    String host = uri.getPort() == -1 ? uri.getHost() : uri.getHost() + ":" + uri.getPort();
    String amzDate = ZonedDateTime.now(ZoneOffset.UTC).format(AMZ_DATE);
    String date = amzDate.substring(0, 8);
    // Signed headers, sorted by name.
    Map<String, String> headers = new TreeMap<>();
    headers.put("host", host);
    headers.put("x-amz-date", amzDate);
    if (sessionToken != null) headers.put("x-amz-security-token", sessionToken);
    String canonicalHeaders = headers.entrySet().stream()
        .map(e -> e.getKey() + ":" + e.getValue().trim() + "\n").collect(Collectors.joining());
    String signedHeaders = String.join(";", headers.keySet());
    String canonicalRequest = String.join("\n", "GET", "/token", query, canonicalHeaders,
        signedHeaders, hex(sha256("")));
    String scopeOfKey = date + "/" + region + "/lambda/aws4_request";
    String stringToSign = String.join("\n", "AWS4-HMAC-SHA256", amzDate, scopeOfKey,
        hex(sha256(canonicalRequest)));
    byte[] key = hmac(("AWS4" + secretAccessKey).getBytes(StandardCharsets.UTF_8), date);
    for (String part : new String[] {region, "lambda", "aws4_request"}) key = hmac(key, part);
    String signature = hex(hmac(key, stringToSign));

    HttpRequest.Builder request = HttpRequest.newBuilder(uri).GET()
        // The vend function's own timeout is 30 s.
        .timeout(Duration.ofSeconds(35))
        .header("x-amz-date", amzDate)
        .header("authorization", "AWS4-HMAC-SHA256 Credential=" + accessKeyId + "/" + scopeOfKey
            + ", SignedHeaders=" + signedHeaders + ", Signature=" + signature);
    if (sessionToken != null) request.header("x-amz-security-token", sessionToken);
    // HttpClient sends the Host header itself, as host[:port], the value signed above.
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  /** RFC 3986: everything but A-Z a-z 0-9 - _ . ~ percent-encoded. */
  static String encode(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8)
        .replace("+", "%20").replace("*", "%2A").replace("%7E", "~");
  }

  static byte[] sha256(String data) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(data.getBytes(StandardCharsets.UTF_8));
  }

  static byte[] hmac(byte[] key, String data) throws Exception {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(key, "HmacSHA256"));
    return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
  }

  static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(bytes);
  }

  /** One JSON field, enough for this demo; use your JSON library in a service. */
  static String field(String json, String name) {
    Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*\"?([^\",}]*)").matcher(json);
    return m.find() ? m.group(1) : "";
  }

  /** Keeps each scope's token until it has minTtl seconds left. Make one per process. */
  static final class TokenCache {
    private final String baseUrl;
    private final Map<String, String> tokens = new HashMap<>();
    private final Map<String, Long> expiresAt = new HashMap<>();

    TokenCache(String baseUrl) {
      this.baseUrl = baseUrl;
    }

    /** The vend answer's JSON; one request at a time, the others then find the token cached. */
    synchronized String get(String scope, int minTtl) throws Exception {
      long now = System.currentTimeMillis() / 1000;
      String json = tokens.get(scope);
      if (json != null && expiresAt.get(scope) - now > minTtl) return json;
      json = vendToken(baseUrl, regionOf(baseUrl), scope, minTtl,
          System.getenv("AWS_ACCESS_KEY_ID"), System.getenv("AWS_SECRET_ACCESS_KEY"),
          System.getenv("AWS_SESSION_TOKEN"));
      // The earlier of its expires_at and our clock's, so a skewed clock keeps it no longer.
      expiresAt.put(scope, Math.min(Long.parseLong(field(json, "expires_at")),
          now + Long.parseLong(field(json, "expires_in"))));
      tokens.put(scope, json);
      return json;
    }
  }

  public static void main(String[] args) throws Exception {
    TokenCache tokens = new TokenCache(System.getenv("TOKEN_VENDING_URL"));
    for (String scope : args.length > 0 ? args : new String[] {null}) {
      String json;
      try {
        json = tokens.get(scope, 300);
      } catch (IllegalStateException e) {
        System.err.println(e.getMessage());
        System.exit(1);
        return;
      }
      // Use it as "Authorization: Bearer " + access_token; never log it.
      System.out.println("token_type=" + field(json, "token_type") + " scope=" + field(json, "scope")
          + " expires_in=" + field(json, "expires_in"));
    }
  }
}
